"""Which paths a launched command writes: copy, sync and download tools' destinations, the
paths `mkdir`/`touch`/... change. The volume rules compare them with read-only mounts."""

from __future__ import annotations

import posixpath
import re

from trainops.core.manifest import FieldPath as Path
from trainops.kube.launch import Launch, option_key

# Commands that write files, and where. Only destinations a command names explicitly count:
# a download into the working directory (`wget URL`, `curl -O`) is not resolved.
# Tools whose sub-command copies SOURCE... DEST (the last location-like argument: a path or
# a `scheme://` / `remote:` URL, so option values such as `--exclude '*.tmp'` do not count).
_COPY_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "aws": frozenset({"cp", "sync", "mv"}),  # aws s3 cp|sync|mv
    "gsutil": frozenset({"cp", "rsync", "mv"}),
    "gcloud": frozenset({"cp", "rsync", "mv"}),  # gcloud storage cp|rsync|mv
    "rclone": frozenset({"copy", "sync", "move", "copyto", "moveto"}),
    "azcopy": frozenset({"copy", "cp", "sync"}),
    "git": frozenset({"clone"}),
    "git-lfs": frozenset(),
}
# Copy commands: DEST is `-t DIR` / `--target-directory=DIR`, else the last positional.
_COPY_COMMANDS = frozenset({"cp", "mv", "rsync", "scp", "install"})
# Commands every positional argument of which is created or changed.
_TOUCH_COMMANDS = frozenset({"mkdir", "touch", "rm", "chmod", "chown"})
# Options naming an output file or directory, per command.
_OUTPUT_OPTIONS: dict[str, frozenset[str]] = {
    "wget": frozenset({"O", "output_document", "P", "directory_prefix"}),
    "curl": frozenset({"o", "output"}),
    "tar": frozenset({"C", "directory"}),
    "unzip": frozenset({"d"}),
    "huggingface-cli": frozenset({"local_dir"}),
    "hf": frozenset({"local_dir"}),
}
_LOCATION = re.compile(r"^(/|\./|\.\./|~|[A-Za-z][\w+.-]*://|[\w-]+:)")


def _options_and_positionals(
    words: list[tuple[str, Path]],
) -> tuple[list[tuple[str, str, Path]], list[tuple[str, Path]]]:
    """(option key, value, path) for `-k v`, `-kv`... as written, and the positional words.
    Without a command's option table, `--opt value` reads `value` as a positional."""
    options: list[tuple[str, str, Path]] = []
    positionals: list[tuple[str, Path]] = []
    i = 0
    while i < len(words):
        word, path = words[i]
        if word.startswith("--") and "=" in word:
            key, _, value = word.partition("=")
            options.append((option_key(key), value, path))
        elif word.startswith("-") and len(word) > 1:
            nxt = words[i + 1] if i + 1 < len(words) else None
            options.append((option_key(word), nxt[0] if nxt else "", nxt[1] if nxt else path))
        else:
            positionals.append((word, path))
        i += 1
    return options, positionals


Options = list[tuple[str, str, Path]]
Positionals = list[tuple[str, Path]]


def write_targets(launch: Launch) -> list[tuple[str, Path]]:
    """Paths one command writes to, as written (absolute or relative), with their argv path."""
    words = launch.words
    if not words:
        return []
    targets = _redirections(words)
    head = posixpath.basename(words[0][0])
    args = [w for w in words[1:] if w[0] not in {">", ">>"} and not w[0].startswith(">")]
    options, positionals = _options_and_positionals(args)
    return targets + _command_targets(head, options, positionals)


def _redirections(words: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """Shell output redirection: `> FILE`, `>> FILE`, `>FILE`."""
    targets: list[tuple[str, Path]] = []
    for i, (word, path) in enumerate(words):
        if word in {">", ">>"} and i + 1 < len(words):
            targets.append(words[i + 1])
        elif word.startswith(">") and word.strip(">"):
            targets.append((word.lstrip(">"), path))
    return targets


def _command_targets(head: str, options: Options, positionals: Positionals) -> Positionals:
    """Where the command `head` writes, by the family it belongs to."""
    if head in _COPY_SUBCOMMANDS:
        return _subcommand_copy(head, positionals)
    if head in _COPY_COMMANDS:
        named = [(v, p) for k, v, p in options if k in {"t", "target_directory"}]
        if named:
            return named
        return positionals[-1:] if len(positionals) >= 2 else []
    if head in _TOUCH_COMMANDS:
        return [(w, p) for w, p in positionals if _LOCATION.match(w) or "/" in w]
    if head in _OUTPUT_OPTIONS:
        if head == "tar" and not _tar_extracts(options):
            return []
        return [(v, p) for k, v, p in options if k in _OUTPUT_OPTIONS[head] and v]
    if head == "dd":
        return [(w[3:], p) for w, p in positionals if w.startswith("of=")]
    return []


def _subcommand_copy(head: str, positionals: Positionals) -> Positionals:
    """`aws s3 cp SOURCE DEST`, `git clone URL [DIR]`...: the last location after the verb."""
    verbs = _COPY_SUBCOMMANDS[head]
    at = next((i for i, (w, _) in enumerate(positionals) if w in verbs), None)
    if at is None:
        return []
    rest = positionals[at + 1 :]
    locations = [(w, p) for w, p in rest if _LOCATION.match(w)]
    if head == "git":
        locations = rest  # git clone URL [DIR]: DIR is any word
    return locations[-1:] if len(locations) >= 2 else []


def _tar_extracts(options: Options) -> bool:
    """`tar -x`, `tar xzf`, `--extract`: only an extracting tar writes into `-C DIR`."""
    return any(
        k == "extract" or (len(k) <= 4 and "x" in k and not k.startswith("exclude"))
        for k, _, _ in options
    )
