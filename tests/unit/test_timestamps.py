"""The fast timestamp parser agrees with datetime on every stamp it accepts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vibe_worktree.core.records import check_timestamp, parse_timestamp, utc_now


@settings(max_examples=2000, deadline=None)
@given(st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 30)))
def test_fast_parse_matches_datetime(moment: datetime) -> None:
    aware = moment.replace(tzinfo=UTC)
    whole = aware.replace(microsecond=0)
    for text, expected in ((aware.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), aware),
                           (aware.isoformat(), aware),
                           (whole.strftime("%Y-%m-%dT%H:%M:%SZ"), whole)):
        assert parse_timestamp(text) == pytest.approx(expected.timestamp(), abs=1e-6)


def test_invalid_dates_are_refused() -> None:
    for text in ("2026-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
                 "2026-04-31T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z",
                 "2026-01-01T00:00:60Z", "2026-00-10T00:00:00Z", "soon", ""):
        with pytest.raises(ValueError):
            parse_timestamp(text)
        with pytest.raises(ValueError):
            check_timestamp(text)


def test_leap_days_and_month_ends_are_accepted() -> None:
    for text in ("2024-02-29T00:00:00Z", "2000-02-29T12:00:00.5Z", "2026-01-31T23:59:59Z",
                 "2026-04-30T00:00:00+00:00"):
        check_timestamp(text)
        assert parse_timestamp(text) > 0


def test_zone_less_and_offset_stamps_still_parse() -> None:
    assert parse_timestamp("2026-12-02T18:45:27") == parse_timestamp("2026-12-02T18:45:27Z")
    assert parse_timestamp("2026-12-02T20:45:27+02:00") == parse_timestamp("2026-12-02T18:45:27Z")


def test_now_is_utc_with_a_z_and_microseconds() -> None:
    stamp = utc_now()
    assert stamp.endswith("Z") and len(stamp) == len("2026-12-02T18:45:27.123456Z")
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert abs(datetime.now(UTC) - parsed) < timedelta(seconds=5)
