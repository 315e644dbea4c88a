"""Runs inside the real Mistral Vibe 3.0.3's virtual environment (Python 3.12), never in
the tests' own: what Vibe itself makes of a hooks file and of a hook command.

    python vibe_driver.py load PATH
        Vibe's strict loader on PATH: {"hooks": [{name, type, command, match, timeout,
        strict, description}], "issues": [message]}.
    python vibe_driver.py run HOOKS_FILE CWD SESSION EVENT... [--parent ID]
        What Vibe does with the hooks of HOOKS_FILE at each EVENT (pre_tool, post_tool,
        post_agent) of a session working in CWD, through its own code from file to
        process: its strict loader, the definitions its app server makes of what it
        loaded, the harness's compiler of those into handlers, each handler's own
        selection (`match`: a tool, or the agent whose turn ended; a subagent's with
        --parent), then the handler, which spawns the command with the event's JSON on
        stdin and judges how it ended. Prints {"ran": [[event, hook name]], "results":
        [the decision's type], "notices": [{scope, status, content}]}. A notice is what
        Vibe shows for a hook that failed or said something; a hook that passed through
        quietly leaves none.
"""

import asyncio
import json
import sys
from pathlib import Path


def load(path: str) -> dict[str, object]:
    from vibe.core.hooks.config import load_hooks_file

    result = load_hooks_file(Path(path), strict=True)
    return {"hooks": [{"name": h.name, "type": h.type.value, "command": h.command,
                       "match": h.match, "timeout": h.timeout, "strict": h.strict,
                       "description": h.description} for h in result.hooks],
            "issues": [i.message for i in result.issues]}


async def run(hooks_file: str, cwd: str, session: str, events: list[str],
              parent: str | None) -> dict[str, object]:
    from mistralai_vibe_local_harness.protocol import (
        RustHookToolCall,
        RustPostToolCallHookInput,
        RustPreToolCallHookInput,
        RustProvidedToolCall,
        RustToolSuccessResult,
    )
    from mistralai_vibe_local_harness.vibe._hook_config import (
        ForeignHookDefinition,
        compile_foreign_hooks,
    )
    from mistralai_vibe_local_harness.vibe._hook_matcher import qualified_tool_name
    from mistralai_vibe_local_harness.vibe._local_actions import HookAgentIdentity, HookContext
    from mistralai_vibe_local_harness.vibe._runtime_config import (
        LocalRuntimeAdapterConfig,
        SessionWorkspace,
    )
    from vibe.core.hooks.config import load_hooks_file

    loaded = load_hooks_file(Path(hooks_file), strict=True)
    if loaded.issues:
        raise SystemExit(f"Vibe's loader reports: {[i.message for i in loaded.issues]}")
    # as the app server maps what it loaded (vibe/app_server/_runtime.py)
    compiled = compile_foreign_hooks([
        ForeignHookDefinition(name=h.name, point=h.type.value, command=h.command,
                              source="user", match=h.match, order=i,
                              timeout_s=h.timeout if h.timeout is not None else 60.0,
                              strict=h.strict)
        for i, h in enumerate(loaded.hooks)])
    names = {f"user:{h.name}": h.name for h in loaded.hooks}
    handlers = compiled.handlers
    notices: list[dict[str, object]] = []

    async def emit(notice: object) -> None:
        notices.append({key: getattr(notice, key) for key in ("scope", "status", "content")})

    config = LocalRuntimeAdapterConfig(workspace=SessionWorkspace(cwd=Path(cwd)))
    agent = HookAgentIdentity("default", parent is None)
    context = HookContext(config=config, messages=(), session_id=session,
                          parent_session_id=parent, emit_hook_notice=emit, agent=agent)
    call = RustHookToolCall(action_id="action-1", call_id="call-1", call=RustProvidedToolCall(
        group_name="file_system", tool_name="bash", arguments={"command": "ls"}))
    tool = qualified_tool_name(call.call)
    ran: list[list[str]] = []
    results: list[str] = []
    for event in events:
        table = {"pre_tool": handlers.pre_tool_call, "post_tool": handlers.post_tool_call,
                 "post_agent": handlers.post_agent_turn}[event]
        for binding, handler in table.items():
            selects = getattr(handler, "selects", None)
            if selects is not None and not selects(agent if event == "post_agent" else tool):
                continue
            ran.append([event, names.get(binding, binding)])
            if event == "pre_tool":
                result = await handler(RustPreToolCallHookInput(tool_call=call), context)
            elif event == "post_tool":
                result = await handler(RustPostToolCallHookInput(
                    tool_call=call, tool_result=RustToolSuccessResult(content=[])), context)
            else:
                result = await handler.handler(None, context)  # type: ignore[union-attr]
            results.append(type(result.output).__name__)
    return {"ran": ran, "results": results, "notices": notices}


def main() -> None:
    args = sys.argv[1:]
    if args[0] == "load":
        print(json.dumps(load(args[1])))
        return
    parent = None
    if "--parent" in args:
        at = args.index("--parent")
        parent = args[at + 1]
        del args[at:at + 2]
    hooks_file, cwd, session, *events = args[1:]
    print(json.dumps(asyncio.run(run(hooks_file, cwd, session, events, parent))))


if __name__ == "__main__":
    main()
