"""Shell integration: `eval "$(vwt shell-init bash)"` (or zsh; fish: `| source`).

The printed function wraps the real binary so that `vwt cd NAME`, `vwt new --cd
...` and `vwt restore --cd NAME` change the shell's own directory (a child
process cannot), leaves a worktree that `vwt rm` or `vwt merge` removed from under
the shell for the repository's main checkout, and registers tab completion of
commands and worktree names.
Completion asks the hidden `vwt __complete -- WORD...` (the words after `vwt` up
to the cursor, the last one possibly empty), so the logic lives once, here.
"""

from __future__ import annotations

SHELLS = ("bash", "zsh", "fish")

# commands whose first positional argument is a worktree name
NAME_COMMANDS = ("cd", "path", "port", "env", "status", "run", "shell", "rm", "snapshot",
                 "restore")
GLOBAL_WITH_VALUE = ("--home", "-C")
GLOBAL_FLAGS = ("--home", "-C", "--version", "--help")

_POSIX_FUNCTION = r"""
vwt() {
  local _vwt_cmd="" _vwt_skip=0 _vwt_cd=0 _vwt_arg _vwt_dir
  for _vwt_arg in "$@"; do
    if [ "$_vwt_skip" = 1 ]; then _vwt_skip=0; continue; fi
    if [ -z "$_vwt_cmd" ]; then
      case "$_vwt_arg" in
        --home|-C) _vwt_skip=1 ;;
        -*) ;;
        *) _vwt_cmd="$_vwt_arg" ;;
      esac
    elif [ "$_vwt_arg" = "--" ]; then
      break
    elif [ "$_vwt_arg" = "--cd" ]; then
      _vwt_cd=1
    fi
  done
  if [ "$_vwt_cmd" = cd ] || [ "$_vwt_cd" = 1 ]; then
    _vwt_dir="$(command vwt "$@")" || return $?
    builtin cd -- "$_vwt_dir"
  elif [ "$_vwt_cmd" = rm ] || [ "$_vwt_cmd" = merge ]; then
    # removing the worktree this shell stands in: go to its repository's main checkout
    _vwt_dir="$(command git rev-parse --path-format=absolute --git-common-dir 2>/dev/null)"
    command vwt "$@"
    _vwt_arg=$?
    if [ ! -d "$PWD" ]; then
      case "$_vwt_dir" in
        */.git) builtin cd -- "${_vwt_dir%/.git}" ;;
        *) builtin cd -- "$HOME" ;;
      esac
      echo "vwt: now in $PWD" >&2
    fi
    return $_vwt_arg
  else
    command vwt "$@"
  fi
}
"""

_BASH_COMPLETION = r"""
_vwt_complete() {
  local IFS=$'\n'
  COMPREPLY=($(command vwt __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _vwt_complete vwt
"""

_ZSH_COMPLETION = r"""
_vwt_complete() {
  local -a _vwt_found
  _vwt_found=("${(@f)$(command vwt __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -a _vwt_found
}
if (( $+functions[compdef] )); then
  compdef _vwt_complete vwt
fi
"""

_FISH = r"""
function vwt --description 'vibe-worktree: one git worktree per session'
    set -l cmd
    set -l skip 0
    set -l wants_cd 0
    for arg in $argv
        if test $skip = 1
            set skip 0
            continue
        end
        if test -z "$cmd"
            switch $arg
                case --home -C
                    set skip 1
                case '-*'
                case '*'
                    set cmd $arg
            end
        else if test "$arg" = --
            break
        else if test "$arg" = --cd
            set wants_cd 1
        end
    end
    if test "$cmd" = cd; or test $wants_cd = 1
        set -l dir (command vwt $argv); or return $status
        builtin cd -- $dir
    else if test "$cmd" = rm; or test "$cmd" = merge
        # removing the worktree this shell stands in: go to its repository's main checkout
        set -l common (command git rev-parse --path-format=absolute --git-common-dir 2>/dev/null)
        command vwt $argv
        set -l code $status
        if not test -d "$PWD"
            if string match -q -- '*/.git' "$common"
                builtin cd -- (string replace -r -- '/\.git$' '' "$common")
            else
                builtin cd -- $HOME
            end
            echo "vwt: now in $PWD" >&2
        end
        return $code
    else
        command vwt $argv
    end
end

function __vwt_complete
    set -l words (commandline -opc)
    set -e words[1]
    command vwt __complete -- $words (commandline -ct) 2>/dev/null
end
complete -c vwt -f -a '(__vwt_complete)'
"""


def init_script(shell: str) -> str:
    """The text to evaluate in `shell`; ValueError for a shell we do not support."""
    if shell == "bash":
        return _POSIX_FUNCTION.lstrip() + _BASH_COMPLETION
    if shell == "zsh":
        return _POSIX_FUNCTION.lstrip() + _ZSH_COMPLETION
    if shell == "fish":
        return _FISH.lstrip()
    raise ValueError(shell)


def _positionals(words: list[str]) -> tuple[str | None, list[str]]:
    """(command, its arguments) in the completed words; global options skipped."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in GLOBAL_WITH_VALUE:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return word, words[i + 1:]
    return None, []


def wants_names(words: list[str]) -> bool:
    """True when the word being completed is the worktree NAME of a command."""
    command, rest = _positionals(words[:-1])
    if command not in NAME_COMMANDS:
        return False
    if "--" in rest:
        return False
    return not [w for w in rest if not w.startswith("-")]


def candidates(words: list[str], commands: list[str], names: list[str]) -> list[str]:
    """What completes the last of `words` (the words after `vwt`, up to the cursor)."""
    if not words:
        words = [""]
    current = words[-1]
    if words[-2:-1] and words[-2] in GLOBAL_WITH_VALUE:
        return []  # a directory: the shell's own file completion does better
    command, _rest = _positionals(words[:-1])
    if command is None:
        pool = GLOBAL_FLAGS if current.startswith("-") else tuple(commands)
    elif wants_names(words) and not current.startswith("-"):
        pool = tuple(names)
    else:
        return []
    return [c for c in pool if c.startswith(current)]
