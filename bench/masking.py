"""The one masking of credentials, for every text the harness shows or keeps, and for a child's output as it is written.

`mask_text` masks a text; `Masker` masks a byte stream line by line as it arrives; `masked_sink` starts a copier
process whose stdin a child writes to (its log then never holds a secret, not even for a moment); run as a script,
`python bench/masking.py CMD...` runs CMD with its output masked (a Slurm job's command), and without a command it
masks stdin to stdout. `brief` bounds a message however long the value it quotes. Standard library only: the script
starts without importing the package.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Mapping

MASK = "<masked>"
# The masker itself starts isolated: no PYTHONPATH, no user or site packages, so nothing (a sitecustomize on the
# PYTHONPATH, a .pth file) runs before it is masking and writes past it into the log it guards. It needs only the
# standard library; the command it runs gets the environment as given.
ISOLATED = ("-I", "-S")
# What a credential looks like in free text (a child's stderr, an exception, a notebook's output, a bad value).
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@'\"]+@")
# user:password@host without a scheme (a MASTER_ADDR, a host list, a mounted share in a path): after a start, a
# space, a quote, a separator or a path's slash.
_BARE_USERINFO = re.compile(r"(?<![^\s\"'`=,;(\[{</])[^\s/@'\"`<>,;=:]+:[^\s/'\"`<>,;]*@(?=[\w\[])")
_SECRET_WORDS = r"password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?"
SECRET_NAME = re.compile(rf"(?i)(?:{_SECRET_WORDS}|auth|cookie|session|(?:^|_)pat(?:$|_)|(?:^|_)pwd$|db_?url|dsn)")
_SECRET_ASSIGNMENT = re.compile(rf"(?i)\b([\w.-]*(?:{_SECRET_WORDS})[\w.-]*[\"']?\s*[=:]\s*)"
                                r"(\"[^\"]*\"|'[^']*'|[^\s,;]+)")
_TOKENS = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_\w{30,}"
                     r"|\bxox[abposr]-[A-Za-z0-9-]{10,}|\bsk-[A-Za-z0-9_-]{20,}|\bhf_[A-Za-z0-9]{30,}"
                     r"|\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}|(?i:\b(?:bearer|basic)\s+)[\w.~+/=-]{16,}"
                     r"|-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.DOTALL)
_HOME = re.compile(r"(?<![\w.-])(?:/home/[^/\s\"':;,]+|/Users/[^/\s\"':;,]+|/root(?![\w.-]))")
_SHELL = ("PWD", "OLDPWD")  # the shell's folders, not secrets (their home part is masked as any path is)


def _secret_values(environ: Mapping[str, str]) -> list[str]:
    """Values of this environment's credential-named variables (a child inherits them and may print them)."""
    values = {v for k, v in environ.items() if SECRET_NAME.search(k) and k not in _SHELL and len(v) >= 8}
    return sorted(values, key=len, reverse=True)


def mask_text(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every credential-shaped value masked: the values of credential-named environment variables,
    user:password@ (in a URL or bare), NAME=value where the name says secret, well-known token formats, and home
    folders (they name the user). Everything the harness shows or keeps passes through here: records, notebooks,
    logs, the terminal, error messages."""
    env = os.environ if environ is None else environ
    home = os.path.expanduser("~")
    for value in _secret_values(env):
        text = text.replace(value, MASK)
    text = _URL_USERINFO.sub(rf"\1{MASK}@", text)
    text = _BARE_USERINFO.sub(f"{MASK}@", text)
    text = _SECRET_ASSIGNMENT.sub(rf"\1{MASK}", text)
    text = _TOKENS.sub(MASK, text)
    if home not in ("", "/") and not _HOME.fullmatch(home):  # a home elsewhere (/var/lib/x): masked by its name
        text = re.sub(rf"(?<![\w.-]){re.escape(home)}(?![\w.-])", "~", text)
    return _HOME.sub("~", text)


LONGEST_WORD = 160  # a quoted value longer than this (a host list, not a path) is shown by its start and length
MAX_LINES = 4


def brief(text: str) -> str:
    """`text` (a message) no longer than a few lines however long the values it quotes: each word (a run without
    spaces, such as a 500-host list) past LONGEST_WORD characters shortened to its start and its length."""
    def shorten(m: re.Match) -> str:
        word = m.group(0)
        return f"{word[:LONGEST_WORD - 20]}...[{len(word)} characters]"

    lines = re.sub(rf"\S{{{LONGEST_WORD + 1},}}", shorten, text).splitlines() or [""]
    return "\n".join(lines[:MAX_LINES] + (["..."] if len(lines) > MAX_LINES else []))


_LINE_END = re.compile(rb"[\r\n]")
_KEY_BEGIN = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----")
_KEY_END = re.compile(rb"-----END [A-Z ]*PRIVATE KEY-----")
HOLD_BYTES = 1 << 16  # a line (or a private key block) longer than this is masked and passed on as it stands


class Masker:
    """Masks a byte stream as it arrives: every complete line (ended by \\n or \\r) is masked and passed on at once;
    a private key's lines are held until its END line, so the whole block is masked. Bytes that are not UTF-8 pass
    through unchanged."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.pending, self.environ = b"", environ

    def _mask(self, data: bytes) -> bytes:
        return mask_text(data.decode("utf-8", "surrogateescape"), self.environ).encode("utf-8", "surrogateescape")

    def feed(self, data: bytes) -> bytes:
        """The masked bytes that can be written now."""
        self.pending += data
        ends = list(_LINE_END.finditer(self.pending))
        cut = ends[-1].end() if ends else 0
        begin = ([None] + list(_KEY_BEGIN.finditer(self.pending, 0, cut)))[-1]  # the last key begun
        if begin and not _KEY_END.search(self.pending, begin.end(), cut) and len(self.pending) < HOLD_BYTES:
            cut = begin.start()  # hold a private key until its end line has ended
        elif not cut and len(self.pending) >= HOLD_BYTES:
            cut = len(self.pending)
        out, self.pending = self.pending[:cut], self.pending[cut:]
        return self._mask(out) if out else b""

    def close(self) -> bytes:
        """The rest, masked, at the end of the stream."""
        out, self.pending = self.pending, b""
        return self._mask(out) if out else b""


def copy_masked(source: int, target: int, environ: Mapping[str, str] | None = None) -> None:
    """Copy file descriptor `source` to `target` until its end, masking as it goes."""
    masker = Masker(environ)
    while chunk := os.read(source, 1 << 16):
        if out := masker.feed(chunk):
            os.write(target, out)
    if out := masker.close():
        os.write(target, out)


def _copier_argv() -> list[str]:
    return [sys.executable, *ISOLATED, os.path.abspath(__file__)]


def _ignore_terminal_signals() -> None:
    """A copier outlives nothing but its writers: Ctrl-C, a hang-up or a kernel interrupt (SIGINT to the kernel's
    process group) must not end it while they still write, or their next write would fail."""
    for s in (signal.SIGINT, signal.SIGHUP, signal.SIGUSR2):
        signal.signal(s, signal.SIG_IGN)


def masked_sink(target, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """A copier process that masks what is written to its `stdin` into `target` (a file object or descriptor); give
    its stdin to a child as stdout/stderr, close yours, and wait for the copier after the child (it ends when every
    writer has closed the pipe)."""
    return subprocess.Popen(_copier_argv(), stdin=subprocess.PIPE, stdout=target, stderr=subprocess.DEVNULL,
                            env=None if env is None else dict(env), start_new_session=True,
                            preexec_fn=_ignore_terminal_signals)


def redirect_masked(target: int, *fds: int, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """From now on, what this process (and every child that inherits them) writes to `fds` (2: stderr) is masked on
    its way to the file descriptor `target`; the copier ends when the process and its children have."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    copier = masked_sink(target, env)
    for fd in fds:
        os.dup2(copier.stdin.fileno(), fd)
    copier.stdin.close()
    return copier


def masked_command(python: str | None = None) -> str:
    """The shell words that start `python` with its output masked by `run_masked` (a Slurm job's interpreter: what
    the job prints reaches its log masked, as it is written)."""
    python = python or sys.executable
    return " ".join(map(shlex.quote, [python, *ISOLATED, os.path.abspath(__file__), python]))


def run_masked(argv: list[str]) -> int:
    """Run `argv` with its stdout and stderr masked into ours; its exit status (a signal's death as 128 + n)."""
    _ignore_terminal_signals()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the scheduler signals every process of the job: the command ends
    read, write = os.pipe()
    child = subprocess.Popen(argv, stdout=write, stderr=write,
                             preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in
                                                 (signal.SIGINT, signal.SIGHUP, signal.SIGUSR2, signal.SIGTERM)])
    os.close(write)
    copy_masked(read, sys.stdout.fileno())
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(run_masked(sys.argv[1:]))
    _ignore_terminal_signals()
    copy_masked(sys.stdin.fileno(), sys.stdout.fileno())
