"""Port leases (SPEC §17): the home-wide table, with real listening sockets."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from vibe_worktree.core.errors import EXIT_ERROR, VwtError
from vibe_worktree.core.layout import Root
from vibe_worktree.core.leases import (
    MAX_COUNT,
    BadTable,
    Lease,
    NoFreeBlock,
    bind_probe,
    check_count,
    current,
    hash_block,
    leasing,
    listed_checker,
    listening_ports,
    ports_of_record,
    probing_checker,
    read_table,
    release,
    repair,
    table_path,
)

BUCKET = "app-0123456789ab"
NOTHING_LISTENS = listed_checker(frozenset())


@pytest.fixture
def root(tmp_path: Path) -> Root:
    home = tmp_path / "home"
    (home / "worktrees").mkdir(parents=True)
    return Root.at(str(home))


def set_range(root: Root, low: int, high: int) -> None:
    Path(root.config_file).write_text(f"port_range = [{low}, {high}]\n")


def write_record(root: Root, name: str, ports: tuple[int, ...] | None,
                 bucket: str = BUCKET) -> None:
    folder = Path(root.claims) / bucket / name
    folder.mkdir(parents=True, exist_ok=True)
    data: dict[str, object] = {"version": 1, "name": name}
    if ports is not None:
        data["ports"] = list(ports)
    (folder / "record.json").write_text(json.dumps(data))


def take(root: Root, name: str, count: int = 1, prefer: int | None = None,
         quiet: bool = True, bucket: str = BUCKET) -> Lease:
    """Lease as a creation does: the record's `ports` written while the lock is held."""
    with leasing(root, bucket, name, count, prefer,
                 NOTHING_LISTENS if quiet else None) as lease:
        write_record(root, name, lease.ports, bucket)
    return lease


def table(root: Root) -> dict[str, int]:
    return read_table(root)


def assert_disjoint(leases: list[Lease]) -> None:
    seen: set[int] = set()
    for lease in leases:
        assert seen.isdisjoint(lease.ports), f"{lease} overlaps another lease"
        seen.update(lease.ports)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A real server socket listening on a free port of 127.0.0.1."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server
    server.close()


def listen_on(family: socket.AddressFamily, address: str) -> socket.socket:
    server = socket.socket(family, socket.SOCK_STREAM)
    server.bind((address, 0))
    server.listen()
    return server


# -- the table ---------------------------------------------------------------------------------
def test_a_lease_starts_at_the_hash_port_and_is_kept_in_the_table(root: Root) -> None:
    lease = take(root, "web")
    low, high = 20000, 29999
    assert lease == hash_block(BUCKET, "web", 1, low, high)
    assert table(root) == {f"{BUCKET}/web": lease.first}
    raw = Path(table_path(root)).read_text()
    assert json.loads(raw) == {f"{BUCKET}/web": lease.first}
    assert Path(table_path(root)).stat().st_mode & 0o777 == 0o600
    assert current(root, BUCKET, "web", lease.ports) == lease


def test_a_worktree_keeps_its_lease_and_the_count_it_was_made_with(root: Root) -> None:
    first = take(root, "web", count=3)
    again = take(root, "web", count=7)  # the configured count changed since
    assert again == first and again.size == 3


def test_a_lease_the_creator_left_half_made_is_taken_up_again(root: Root) -> None:
    """Killed between writing the table and its record: the entry counts as one port, and
    the next creation of that name keeps its first port when no other lease is in the way."""
    lease = take(root, "web", count=2)
    write_record(root, "web", None)  # the record does not say its ports
    assert current(root, BUCKET, "web", None) == Lease(lease.first, 1)
    assert take(root, "web", count=2) == lease


def test_blocks_never_overlap_and_a_neighbours_count_comes_from_its_record(root: Root) -> None:
    set_range(root, 40000, 40019)
    wide = take(root, "wide", count=5, prefer=40000)
    assert wide.ports == (40000, 40001, 40002, 40003, 40004)
    narrow = [take(root, f"n{i}") for i in range(15)]
    assert_disjoint([wide, *narrow])
    assert {p for lease in narrow for p in lease.ports} == set(range(40005, 40020))
    with pytest.raises(NoFreeBlock):
        take(root, "one-too-many")


def test_the_search_wraps_around_inside_the_range(root: Root) -> None:
    set_range(root, 40000, 40009)
    leases = [take(root, f"w{i}") for i in range(10)]
    assert sorted(lease.first for lease in leases) == list(range(40000, 40010))


def test_a_block_is_moved_down_to_fit_at_the_end_of_the_range(root: Root) -> None:
    block = hash_block(BUCKET, "web", 100, 40000, 40099)
    assert block == Lease(40000, 100)
    assert hash_block(BUCKET, "web", 10, 40000, 40009).last == 40009


def test_no_free_block_fails_naming_port_range_and_leases_nothing(root: Root) -> None:
    set_range(root, 40000, 40003)
    take(root, "a", count=2, prefer=40000)
    before = table(root)
    with pytest.raises(NoFreeBlock) as caught:
        take(root, "b", count=3)
    assert caught.value.exit_code == EXIT_ERROR
    assert "port_range" in caught.value.message and "config.toml" in caught.value.message
    assert table(root) == before
    with pytest.raises(NoFreeBlock):
        take(root, "c", count=5)  # more ports than the range has


def test_a_lease_is_taken_back_when_its_record_cannot_be_written(root: Root) -> None:
    with pytest.raises(OSError), leasing(root, BUCKET, "web", 1, None, NOTHING_LISTENS):
        raise OSError(28, "No space left on device")
    assert table(root) == {}
    kept = take(root, "kept")
    with pytest.raises(RuntimeError), leasing(root, BUCKET, "kept", 1):
        raise RuntimeError("a failure after an existing lease was found")
    assert table(root) == {f"{BUCKET}/kept": kept.first}, "an older lease is never taken back"


def test_prefer_gives_a_restored_worktree_its_old_block_when_it_is_free(root: Root) -> None:
    set_range(root, 40000, 40099)
    assert take(root, "back", count=3, prefer=40050).first == 40050
    release(root, BUCKET, "back")
    take(root, "squatter", prefer=40051)
    moved = take(root, "back", count=3, prefer=40050)
    assert not {40051} & set(moved.ports) and moved.size == 3


def test_release_drops_the_lease_and_makes_no_file_in_a_home_without_leases(root: Root) -> None:
    assert release(root, BUCKET, "never") is False
    assert not Path(root.claims).exists(), "a home Vibe alone uses gets no lease files"
    take(root, "a")
    b = take(root, "b")
    assert release(root, BUCKET, "a") is True
    assert release(root, BUCKET, "a") is False
    assert table(root) == {f"{BUCKET}/b": b.first}


def test_a_table_that_is_not_one_is_never_acted_upon(root: Root) -> None:
    take(root, "a")
    Path(table_path(root)).write_text('{"not a key": "nor a port"}')
    with pytest.raises(BadTable) as caught:
        take(root, "b")
    assert "vwt prune" in caught.value.message
    assert release(root, BUCKET, "a") is False
    assert Path(table_path(root)).read_text() == '{"not a key": "nor a port"}'


# -- repair ------------------------------------------------------------------------------------
def test_repair_drops_leases_whose_worktree_is_gone_and_keeps_the_rest(root: Root) -> None:
    kept = take(root, "kept")
    take(root, "gone")
    broken = take(root, "broken")
    (Path(root.claims) / BUCKET / "gone" / "record.json").unlink()
    (Path(root.claims) / BUCKET / "broken" / "record.json").write_text("{ not json")
    planned = repair(root, dry_run=True)
    assert planned.dropped == ((BUCKET, "gone"),)
    assert f"{BUCKET}/gone" in table(root), "a dry run changes nothing"
    done = repair(root)
    assert done.dropped == ((BUCKET, "gone"),) and not done.rebuilt
    assert table(root) == {f"{BUCKET}/kept": kept.first, f"{BUCKET}/broken": broken.first}
    assert repair(root).dropped == ()


def test_repair_rebuilds_an_unreadable_table_from_the_records(root: Root) -> None:
    a = take(root, "a", count=2)
    b = take(root, "b", count=3)
    write_record(root, "overlapping", (a.first,))  # a block another record already has
    Path(table_path(root)).write_text("")
    done = repair(root)
    assert done.rebuilt
    assert table(root) == {f"{BUCKET}/a": a.first, f"{BUCKET}/b": b.first}


# -- what listens ------------------------------------------------------------------------------
def test_the_kernels_table_lists_listeners_on_every_local_address() -> None:
    servers = [listen_on(socket.AF_INET, "127.0.0.1"), listen_on(socket.AF_INET, "0.0.0.0")]
    if socket.has_ipv6:
        try:
            servers.append(listen_on(socket.AF_INET6, "::1"))
        except OSError:
            pass  # no IPv6 loopback here
    bound_only = socket.socket()
    bound_only.bind(("127.0.0.1", 0))
    try:
        listening = listening_ports()
        assert listening is not None, "Linux has /proc/net/tcp"
        for server in servers:
            assert server.getsockname()[1] in listening
        assert bound_only.getsockname()[1] not in listening, "bound but not listening"
    finally:
        bound_only.close()
        for server in servers:
            server.close()


def test_a_port_something_listens_on_is_never_leased(root: Root,
                                                     listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    set_range(root, port, port)
    with pytest.raises(NoFreeBlock):
        take(root, "web", quiet=False)
    set_range(root, port, port + 40)
    leases = [take(root, f"w{i}", quiet=False) for i in range(20)]
    assert all(port not in lease.ports for lease in leases)
    assert_disjoint(leases)


def test_a_block_with_one_busy_port_inside_is_skipped(root: Root,
                                                      listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    set_range(root, port - 2, port + 10)
    leases = [take(root, f"w{i}", count=3, quiet=False) for i in range(3)]
    assert all(port not in lease.ports for lease in leases)
    assert_disjoint(leases)


@pytest.mark.parametrize("family,address", [(socket.AF_INET, "127.0.0.1"),
                                            (socket.AF_INET, "0.0.0.0"),
                                            (socket.AF_INET6, "::1")])
def test_binding_finds_a_listener_where_there_is_no_kernel_table(
        root: Root, family: socket.AddressFamily, address: str) -> None:
    """The way other systems (macOS) see a busy port: a bind fails."""
    try:
        server = listen_on(family, address)
    except OSError:
        pytest.skip(f"no {address} on this machine")
    port = server.getsockname()[1]
    try:
        assert bind_probe(port)
        set_range(root, port, port + 3)
        with leasing(root, BUCKET, "web", 1, None, probing_checker()) as lease:
            write_record(root, "web", lease.ports)
        assert lease.first != port
    finally:
        server.close()
    assert not bind_probe(port), "free again once the server is gone"


# -- small parts -------------------------------------------------------------------------------
def test_count_must_be_a_whole_number_from_1_to_100() -> None:
    assert check_count(1, "f") == 1 and check_count(MAX_COUNT, "f") == MAX_COUNT
    for bad in (0, 101, -1, True, "2", 1.5):
        with pytest.raises(VwtError, match=r"f: \[ports\] count"):
            check_count(bad, "f")


def test_a_records_ports_count_only_when_they_are_one_block() -> None:
    assert ports_of_record({"ports": [5, 6, 7]}) == (5, 6, 7)
    for bad in ([], [5, 7], [True], ["5"], [0], [65535, 65536], "5", None, list(range(1, 102))):
        assert ports_of_record({"ports": bad}) is None, bad
