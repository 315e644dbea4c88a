"""Runs inside the real Mistral Vibe 3.0.3's virtual environment (Python 3.12), never in
the tests' own: what Vibe itself makes of a hooks file and of a hook command.

    python vibe_driver.py load PATH
        Vibe's strict loader on PATH: {"hooks": [{name, type, command, match, timeout,
        strict, description}], "issues": [message]}.
    python vibe_driver.py run COMMAND CWD SESSION EVENT... [--parent ID]
        Vibe's own hook executors (the ones its runtime registers for the [[hooks]] of a
        hooks.toml) run COMMAND for each EVENT (pre_tool, post_tool, post_agent) of a
        session working in CWD: {"results": [the decision's type], "notices": [{scope,
        status, content}]}. A notice is what Vibe shows for a hook that failed or said
        something; a hook that passed through quietly leaves none.
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


async def run(command: str, cwd: str, session: str, events: list[str],
              parent: str | None) -> dict[str, object]:
    from mistralai_vibe_local_harness.protocol import (
        RustHookToolCall,
        RustPostToolCallHookInput,
        RustPreToolCallHookInput,
        RustProvidedToolCall,
        RustToolSuccessResult,
    )
    from mistralai_vibe_local_harness.vibe._foreign_hooks import (
        build_post_agent_turn_handler,
        build_post_tool_call_handler,
        build_pre_tool_call_handler,
    )
    from mistralai_vibe_local_harness.vibe._local_actions import HookAgentIdentity, HookContext
    from mistralai_vibe_local_harness.vibe._runtime_config import (
        LocalRuntimeAdapterConfig,
        SessionWorkspace,
    )

    notices: list[dict[str, object]] = []

    async def emit(notice: object) -> None:
        notices.append({key: getattr(notice, key) for key in ("scope", "status", "content")})

    config = LocalRuntimeAdapterConfig(workspace=SessionWorkspace(cwd=Path(cwd)))
    context = HookContext(config=config, messages=(), session_id=session,
                          parent_session_id=parent, emit_hook_notice=emit,
                          agent=HookAgentIdentity("default", parent is None))
    call = RustHookToolCall(action_id="action-1", call_id="call-1", call=RustProvidedToolCall(
        group_name="file_system", tool_name="bash", arguments={"command": "ls"}))
    results = []
    for event in events:
        if event == "pre_tool":
            pre = build_pre_tool_call_handler(name="vwt", command=command)
            result = await pre(RustPreToolCallHookInput(tool_call=call), context)
        elif event == "post_tool":
            post = build_post_tool_call_handler(name="vwt", command=command)
            result = await post(RustPostToolCallHookInput(
                tool_call=call, tool_result=RustToolSuccessResult(content=[])), context)
        elif event == "post_agent":
            agent = build_post_agent_turn_handler(name="vwt", command=command)
            result = await agent.handler(None, context)  # type: ignore[arg-type]
        else:
            raise SystemExit(f"unknown event {event}")
        results.append(type(result.output).__name__)
    return {"results": results, "notices": notices}


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
    command, cwd, session, *events = args[1:]
    print(json.dumps(asyncio.run(run(command, cwd, session, events, parent))))


if __name__ == "__main__":
    main()
