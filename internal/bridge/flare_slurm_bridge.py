# Written by `flare-slurm prepare --launcher flare-slurm`; prepare writes it again, do not edit.
"""NVFlare job launcher that hands every job of this site to the flare-slurm binary.

It holds no launcher logic: validation, compilation, submission, watching,
cancellation and return codes are decided by the binary recorded in
local/resources.json.default (argument ``flare_slurm``), called with
``--json``. Job credentials reach it on standard input (the launch request),
never on its command line; the binary gets the parent's environment as it is
at each launch (a launch process inherits it, a launch line carries it), which
holds the sources of the study secrets.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import struct
import subprocess
import threading
from typing import Any, Optional

from nvflare.apis.event_type import EventType
from nvflare.apis.fl_constant import FLContextKey, JobConstants
from nvflare.apis.fl_context import FLContext
from nvflare.apis.job_launcher_spec import (
    JobHandleSpec,
    JobLauncherSpec,
    JobProcessArgs,
    JobReturnCode,
    add_launcher,
)

# Set in every batch script flare-slurm writes (NVFlare's name for it): a
# worker loads this site's components too, and never launches jobs.
CHILD_PROCESS_ENV = "NVFLARE_SLURM_CHILD_PROCESS"

# How long one launch, status or cancel call may take before the bridge
# gives up on it; wait has no limit (it lasts as long as the job). Giving up
# sends SIGTERM, never SIGKILL, to a launch: flare-slurm stops a launch that
# has not submitted yet, and finishes one whose sbatch runs (its handle
# written, or the job cancelled) and answers, which the bridge then reads.
CALL_TIMEOUT = 600.0

# How long any other call may take to end after SIGTERM before it is killed.
TERMINATE_GRACE = 30.0

# Error codes of a call that no retry can change: wait stops on them.
PERMANENT_ERRORS = frozenset({"no_such_job"})

# How long a launch waits for a new follower's first line, which says that
# it takes launch lines (an older flare-slurm prints none: the launch then
# runs as a launch process).
HELLO_TIMEOUT = 30.0

# Seconds between two attempts when waiting itself fails (the follower
# could not start, or ended before the job did).
RETRY_INTERVAL = 10.0

# The most problems, and characters, of a failed call's answer that go into
# the one exception NVFlare logs: a hostile job meta can hold thousands of
# problems (the binary lists at most 100 per file).
MAX_MESSAGE_PROBLEMS = 20
MAX_MESSAGE_CHARS = 8192


class FlareSlurmError(RuntimeError):
    """A flare-slurm call failed; the message is the binary's own, code its error code ("" when none)."""

    def __init__(self, message: str, code: str = ""):
        super().__init__(message)
        self.code = code


# The most symlinks one resolution follows (the kernel's ELOOP limit).
MAX_LINKS = 40

# POSIX access ACLs (acl(5)): a version 2 header, then 8-byte entries of
# tag, permissions and id, little-endian.
ACL_XATTR = "system.posix_acl_access"
ACL_USER, ACL_GROUP, ACL_MASK, ACL_WRITE = 0x02, 0x08, 0x10, 0x02


def untrusted(path: str) -> Optional[str]:
    """Why another account could replace the binary at path, or None (resolve_trusted)."""
    return resolve_trusted(path)[1]


def resolve_trusted(path: str) -> tuple[str, Optional[str]]:
    """The binary's resolved path, and why another account could replace it (None: it cannot).

    The binary reads every job's credentials on its standard input, so it
    gets the rule flare-slurm applies to the Slurm commands (Go's
    internal/trust, which a Go test holds this function to): an absolute
    path to an executable regular file that, like every directory above it,
    is owned by root or by this account and writable by no other account:
    not by every account, not by a group other than root's, not through a
    POSIX ACL. A sticky directory (like /tmp) may be writable by others.
    Every symlink on the way must be owned by root or this account and lie
    in such a directory. The caller runs the resolved path: running path
    would resolve its links again.
    """
    if not os.path.isabs(path):
        return path, f"{path!r} is not an absolute path"
    try:
        real, links = _resolve_links(path)
    except OSError as e:
        return path, f"{path} cannot be resolved: {e.strerror}"
    euid = os.geteuid()
    for link in links:
        owner = os.lstat(link).st_uid
        if owner not in (0, euid):
            return real, f"the symlink {link} is owned by uid {owner}, neither root nor this account (uid {euid})"
        why = _untrusted_dirs(link, os.path.dirname(link), euid)
        if why is not None:
            return real, why
    try:
        st = os.stat(real)
    except OSError as e:
        return real, f"cannot check {real}: {e.strerror}"
    if not stat.S_ISREG(st.st_mode) or not os.access(real, os.X_OK) or st.st_mode & 0o111 == 0:
        return real, f"{path} (resolved to {real}) is not an executable regular file"
    why = _untrusted_entry(real, real, st, euid, False)
    if why is None:
        why = _untrusted_dirs(real, os.path.dirname(real), euid)
    return real, why


def _resolve_links(path: str) -> tuple[str, list[str]]:
    """path resolved one component at a time, as the kernel does, and the symlinks followed."""
    links: list[str] = []
    rest = path.split("/")
    resolved = "/"
    while rest:
        name = rest.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            resolved = os.path.dirname(resolved)
            continue
        nxt = os.path.join(resolved, name)
        if not stat.S_ISLNK(os.lstat(nxt).st_mode):
            resolved = nxt
            continue
        if len(links) == MAX_LINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
        target = os.readlink(nxt)
        links.append(nxt)
        if os.path.isabs(target):
            resolved = "/"
        rest = target.split("/") + rest
    return resolved, links


def _untrusted_dirs(program: str, directory: str, euid: int) -> Optional[str]:
    """Why directory, or one above it, lets another account replace program; None when none does."""
    entry = directory
    while True:
        try:
            st = os.stat(entry)
        except OSError as e:
            return f"cannot check {entry}, a directory above {program}: {e.strerror}"
        why = _untrusted_entry(program, entry, st, euid, True)
        if why is not None:
            return why
        parent = os.path.dirname(entry)
        if parent == entry:
            return None
        entry = parent


def _untrusted_entry(program: str, entry: str, st: os.stat_result, euid: int, is_dir: bool) -> Optional[str]:
    """Why one entry (the program or a directory above it) lets another account replace program."""
    what = f"{entry} is" if entry == program else f"{program} is in {entry}, which is"
    if st.st_uid not in (0, euid):
        return f"{what} owned by uid {st.st_uid}, neither root nor this account (uid {euid})"
    if is_dir and st.st_mode & stat.S_ISVTX:
        return None
    writer = _acl_writer(entry, euid)
    if writer is not None:
        return f"{what} writable by {writer} through a POSIX ACL"
    if st.st_mode & 0o002:
        return f"{what} writable by every account (mode {stat.S_IMODE(st.st_mode):04o})"
    if st.st_mode & 0o020 and st.st_gid != 0:
        return f"{what} writable by group {st.st_gid} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _acl_writer(path: str, euid: int) -> Optional[str]:
    """An account other than root and euid, or a group other than root's, that path's access ACL lets write."""
    try:
        acl = os.getxattr(path, ACL_XATTR)
    except OSError:
        return None  # no ACL, or a filesystem without them
    if len(acl) < 4 or struct.unpack_from("<I", acl)[0] != 2:
        return None
    entries = [struct.unpack_from("<HHI", acl, i) for i in range(4, len(acl) - 7, 8)]
    mask = next((perm for tag, perm, _ in entries if tag == ACL_MASK), 0xFFFF)
    for tag, perm, ident in entries:
        if perm & mask & ACL_WRITE == 0:
            continue
        if tag == ACL_USER and ident not in (0, euid):
            return f"uid {ident}"
        if tag == ACL_GROUP and ident != 0:
            return f"group {ident}"
    return None


class _Binary:
    """Runs one flare-slurm command with --json and reads its envelope."""

    def __init__(self, path: str, workspace: str, logger: logging.Logger):
        self.path = path
        self.workspace = workspace
        self.logger = logger

    def call(self, command: str, args: list[str], stdin: Optional[bytes] = None,
             timeout: Optional[float] = -1.0) -> dict[str, Any]:
        """Runs one command and returns its data; raises FlareSlurmError otherwise.

        timeout is how long the bridge waits for the answer: -1 means
        CALL_TIMEOUT (read when called), None as long as the binary runs.
        Giving up is SIGTERM, then reading the answer: a launch stops before
        it submits, or finishes with the job's handle (never killed between
        sbatch and its handle: the job would run with live credentials and
        nobody watching it); any other call is killed TERMINATE_GRACE seconds
        later. stderr is logged line by line as the binary writes it: a wait
        says there why its job is still pending, long before it ends.
        """
        if timeout is not None and timeout < 0:
            timeout = CALL_TIMEOUT
        # Checked before every call: the binary could be replaced at any time.
        if not os.path.exists(self.path):
            raise FlareSlurmError(f"flare-slurm {command}: cannot run {self.path}: it does not exist")
        real, why = resolve_trusted(self.path)
        if why is not None:
            raise FlareSlurmError(f"flare-slurm {command}: not run: the flare-slurm binary is not trusted: {why} "
                                  "(install it owned by root or the runtime account, writable by no other account)")
        # The resolved path runs: running self.path would resolve its links again.
        argv = [real, command, "--workspace", self.workspace, *args, "--json"]
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except (OSError, subprocess.SubprocessError) as e:
            raise FlareSlurmError(f"flare-slurm {command}: cannot run {self.path}: {e}") from e
        lines: list[str] = []
        relay = threading.Thread(target=self._relay, args=(command, proc, lines), daemon=True)
        relay.start()
        feed = threading.Thread(target=_feed, args=(proc, stdin if stdin is not None else b""), daemon=True)
        feed.start()
        gave_up = threading.Event()
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            proc.kill()

        grace = threading.Timer(TERMINATE_GRACE, kill)
        grace.daemon = True

        def give_up() -> None:
            gave_up.set()
            self.logger.warning("flare-slurm %s did not answer within %.0f s: asking it to stop (SIGTERM)", command, timeout)
            proc.terminate()
            if command != "launch":
                grace.start()

        timer = threading.Timer(timeout, give_up) if timeout is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            assert proc.stdout is not None
            stdout = proc.stdout.read()
            proc.wait()
        finally:
            if timer is not None:
                timer.cancel()
            grace.cancel()
            relay.join()
            feed.join()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        stderr = "\n".join(lines)
        if killed.is_set():
            raise FlareSlurmError(f"flare-slurm {command}: did not end within {TERMINATE_GRACE:.0f} s of SIGTERM and was killed")
        try:
            answer = json.loads(stdout)
        except ValueError as e:
            if gave_up.is_set():
                raise FlareSlurmError(f"flare-slurm {command}: no answer within {timeout} seconds; "
                                      "it was asked to stop (SIGTERM)") from e
            raise FlareSlurmError(_bounded(
                f"flare-slurm {command} exited {proc.returncode} without a JSON answer: "
                f"{stderr or stdout.decode('utf-8', 'replace') or '(no output)'}"
            )) from e
        if not isinstance(answer, dict):
            raise FlareSlurmError(f"flare-slurm {command} answered {answer!r}, not a JSON object")
        data = answer.get("data")
        if answer.get("status") == "ok" and isinstance(data, dict):
            return data
        raw_error = answer.get("error")
        error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
        code = error.get("code")
        raise FlareSlurmError(_failure_message(command, answer, error), code if isinstance(code, str) else "")

    def _relay(self, command: str, proc: subprocess.Popen[bytes], lines: list[str]) -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.strip():
                lines.append(line)
                self.logger.info("flare-slurm %s: %s", command, line)


def _failure_message(command: str, answer: dict[str, Any], error: dict[str, Any]) -> str:
    """The message of a failed call: the binary's error, its first problems, its hint; bounded."""
    message = f"flare-slurm {command}: {error.get('message') or repr(answer)}"
    raw = error.get("problems")
    problems = [p for p in raw if isinstance(p, dict)] if isinstance(raw, list) else []
    for p in problems[:MAX_MESSAGE_PROBLEMS]:
        message += f"\n  {p.get('file', '')}: {p.get('path', '')}: {p.get('message', '')}"
    if len(problems) > MAX_MESSAGE_PROBLEMS:
        message += (f"\n  ... {len(problems) - MAX_MESSAGE_PROBLEMS} more problem(s) not shown "
                    f"(run flare-slurm {command} --json by hand to see them)")
    if error.get("hint"):
        message += f" ({error['hint']})"
    return _bounded(message)


def _bounded(message: str) -> str:
    """message cut at MAX_MESSAGE_CHARS, saying how much was cut."""
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + f"... ({len(message) - MAX_MESSAGE_CHARS} more characters not shown)"
    return message


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    """Writes the request (or nothing) to the binary's standard input."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except OSError:
        pass  # the binary exited without reading it: its answer says why


def _return_code(data: dict[str, Any]) -> Optional[int]:
    """The return code of a terminal status answer, None while not terminal."""
    code = data.get("return_code")
    if data.get("terminal") is True and isinstance(code, int) and not isinstance(code, bool):
        return code
    return None


class _FollowerGone(FlareSlurmError):
    """The follower ended (or could not start) before it answered a launch."""


class _Follower:
    """One `flare-slurm wait --follow` process for all the jobs this parent launches and waits for.

    A handle's wait() sends its job id on the process's standard input and
    blocks until the process prints that job's result (one JSON line per
    job). launch() sends `launch TAG ENVIRON REQUEST` (this process's
    environment as a JSON array, then the launch request) as one line and
    blocks until the line of that tag answers: the follower launches it as
    `launch --request - --attach --no-bootstrap` would in a process started
    now (the workspace's settings and this environment as they are now),
    without a process start and a schema compile per job. It does so only
    after the follower's first line says it takes launch lines (an older
    binary does not). One process and its memory serve every job of the
    parent, as one squeue per poll interval serves every job of the
    workspace. It is started at the first launch or wait; when it ends (or
    cannot start), every wait pending on it fails and tries again, starting
    a new one, and every launch pending on it raises _FollowerGone. The
    parent's end closes its standard input: it then exits once the jobs it
    was given have ended, as a wait process per job did.
    """

    def __init__(self, binary: _Binary):
        self.binary = binary
        self._lock = threading.Lock()  # the state below
        self._write = threading.Lock()  # one writer of the process's input at a time
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        # job id -> the waits for it: (done, slot, the process asked)
        self._pending: dict[str, list[tuple[threading.Event, dict[str, Any], "subprocess.Popen[bytes]"]]] = {}
        # launch tag -> (done, slot, the process asked)
        self._launches: dict[str, tuple[threading.Event, dict[str, Any], "subprocess.Popen[bytes]"]] = {}
        # each process's first line: set when it came (or the process ended), with whether it takes launch lines
        self._hello: dict["subprocess.Popen[bytes]", tuple[threading.Event, dict[str, bool]]] = {}
        self._tags = 0

    def launch(self, request: dict[str, Any]) -> dict[str, Any]:
        """The launch answer's data; FlareSlurmError when it failed, _FollowerGone when no launch line was answered.

        After CALL_TIMEOUT seconds without an answer the bridge asks the
        follower to stop this launch (`stop TAG`, as SIGTERM to a launch
        process): it stops before it submits, or finishes with the job's
        handle and answers; the answer is then read as any other, and a
        follower that ends before it answers is then an error, not a reason
        to launch again.
        """
        done = threading.Event()
        slot: dict[str, Any] = {}
        # Before anything is sent: a request Python wrote (NaN, a huge
        # meta) is the launch process's to refuse, with its words.
        line = b" ".join([json.dumps([f"{k}={v}" for k, v in os.environ.items()]).encode("utf-8"),
                          json.dumps(request, default=str).encode("utf-8")])
        with self._lock:
            self._tags += 1
            tag = str(self._tags)
            try:
                proc = self._running()
            except (OSError, ValueError) as e:
                raise _FollowerGone(f"flare-slurm wait --follow: cannot run {self.binary.path}: {e}") from e
            hello, said = self._hello[proc]
        if not hello.wait(HELLO_TIMEOUT):
            with self._lock:
                said.setdefault("launch_lines", False)  # the next launches do not wait for it again
            hello.set()
        if not said.get("launch_lines"):
            raise _FollowerGone("flare-slurm wait --follow takes no launch lines (a flare-slurm older than the bridge, "
                                "or it ended)")
        with self._lock:
            if proc not in self._hello:  # it ended meanwhile: nobody would answer
                raise _FollowerGone("flare-slurm wait --follow ended before the launch was sent")
            self._launches[tag] = (done, slot, proc)
        try:
            self._send(proc, b"launch " + tag.encode() + b" " + line)
        except (OSError, ValueError) as e:
            with self._lock:
                self._launches.pop(tag, None)
            raise _FollowerGone(f"flare-slurm wait --follow: cannot send the launch: {e}") from e
        stopped = False
        if not done.wait(CALL_TIMEOUT):
            self.binary.logger.warning("flare-slurm launch did not answer within %.0f s: asking it to stop", CALL_TIMEOUT)
            stopped = True
            try:
                self._send(proc, b"stop " + tag.encode())
            except (OSError, ValueError):
                pass  # the follower ended: the wait below learns it
            done.wait()
        if "gone" in slot:
            if stopped:
                raise FlareSlurmError(f"flare-slurm launch: given up after {CALL_TIMEOUT:.0f} s, and {slot['gone']}")
            raise _FollowerGone(slot["gone"])
        if "error" in slot:
            raise FlareSlurmError(slot["error"], slot.get("code", ""))
        data: dict[str, Any] = slot["data"]
        return data

    def _send(self, proc: "subprocess.Popen[bytes]", line: bytes) -> None:
        """Writes one line to the follower, whole or not at all as far as it reads (a line without
        its newline is dropped); never with self._lock held, which the reader of its answers takes."""
        with self._write:
            assert proc.stdin is not None
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()

    def wait(self, job_id: str) -> dict[str, Any]:
        """The job's terminal status (the envelope's data); FlareSlurmError when it cannot be watched."""
        done = threading.Event()
        slot: dict[str, Any] = {}
        try:
            with self._lock:
                proc = self._running()
                self._pending.setdefault(job_id, []).append((done, slot, proc))
            self._send(proc, job_id.encode("utf-8"))
        except (OSError, ValueError) as e:
            with self._lock:
                waits = [w for w in self._pending.get(job_id, []) if w[0] is not done]
                if waits:
                    self._pending[job_id] = waits
                else:
                    self._pending.pop(job_id, None)
            raise FlareSlurmError(f"flare-slurm wait --follow: cannot run {self.binary.path}: {e}") from e
        done.wait()
        if "error" in slot:
            raise FlareSlurmError(slot["error"], slot.get("code", ""))
        data: dict[str, Any] = slot["data"]
        return data

    def close(self) -> None:
        """Closes the follower's input: it exits once the jobs it was given have ended."""
        with self._lock:
            proc = self._proc
        if proc is not None and proc.stdin is not None:
            with self._write:  # never between a line and its newline
                try:
                    proc.stdin.close()
                except OSError:
                    pass

    def _running(self) -> "subprocess.Popen[bytes]":
        """The follower process, started when there is none (called with the lock held)."""
        if self._proc is not None and self._proc.poll() is None and self._proc.stdin is not None and not self._proc.stdin.closed:
            return self._proc
        # The binary's rule for every call (_Binary.call): checked before
        # each start, since it could be replaced at any time.
        if not os.path.exists(self.binary.path):
            raise OSError(f"{self.binary.path} does not exist")
        real, why = resolve_trusted(self.binary.path)
        if why is not None:
            raise OSError(f"the flare-slurm binary is not trusted: {why} "
                          "(install it owned by root or the runtime account, writable by no other account)")
        # The resolved path runs, as in _Binary.call: running self.binary.path
        # would resolve its links again.
        argv = [real, "wait", "--workspace", self.binary.workspace, "--follow", "--json"]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._proc = proc
        self._hello[proc] = (threading.Event(), {})
        threading.Thread(target=self._read, args=(proc,), name="flare-slurm-follow", daemon=True).start()
        threading.Thread(target=self._log, args=(proc,), name="flare-slurm-follow-log", daemon=True).start()
        return proc

    def _read(self, proc: "subprocess.Popen[bytes]") -> None:
        """Hands each result line to the waits of its job; fails the waits
        that asked this process when it ends."""
        assert proc.stdout is not None
        for raw in proc.stdout:
            try:
                answer = json.loads(raw)
                if isinstance(answer, dict) and answer.get("command") == "hello":
                    hello, said = self._hello[proc]
                    data = answer.get("data")
                    said["launch_lines"] = isinstance(data, dict) and data.get("launch_lines") == 1
                    hello.set()
                    continue
                if isinstance(answer, dict) and answer.get("command") == "launch":
                    self._answer_launch(answer)
                    continue
                if isinstance(answer, dict) and answer.get("status") == "error" and not isinstance(answer.get("data"), dict):
                    # Its own failure (a workspace it cannot open), its last line: the waits and
                    # launches sent to it fail when it ends, below.
                    raw_error = answer.get("error")
                    self.binary.logger.error("%s", _failure_message("wait --follow", answer, raw_error if isinstance(raw_error, dict) else {}))
                    continue
                job_id = answer["data"]["job_id"]
            except (ValueError, TypeError, KeyError) as e:
                self.binary.logger.error("flare-slurm wait --follow: unreadable line %r: %s", raw[:200], e)
                continue
            slot: dict[str, Any]
            if answer.get("status") == "ok" and _return_code(answer["data"]) is not None:
                slot = {"data": answer["data"]}
            else:
                raw_error = answer.get("error")
                error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
                code = error.get("code")
                slot = {"error": _failure_message("wait", answer, error), "code": code if isinstance(code, str) else ""}
            with self._lock:
                waits = self._pending.pop(job_id, [])
            for done, waiter_slot, _ in waits:
                waiter_slot.update(slot)
                done.set()
        code = proc.wait()
        failed = []
        with self._lock:
            if self._proc is proc:
                self._proc = None
            self._hello.pop(proc)[0].set()  # no hello will come: launches go elsewhere
            for tag in [t for t, entry in self._launches.items() if entry[2] is proc]:
                done, launch_slot, _ = self._launches.pop(tag)
                launch_slot["gone"] = f"flare-slurm wait --follow ended (exit {code}) before it answered the launch"
                done.set()
            for job_id in list(self._pending):
                mine = [w for w in self._pending[job_id] if w[2] is proc]
                failed.extend(mine)
                rest = [w for w in self._pending[job_id] if w[2] is not proc]
                if rest:
                    self._pending[job_id] = rest
                else:
                    del self._pending[job_id]
        for done, waiter_slot, _ in failed:
            waiter_slot["error"] = f"flare-slurm wait --follow ended (exit {code}) before the job did"
            done.set()

    def _answer_launch(self, answer: dict[str, Any]) -> None:
        """Hands a launch's answer line to the launch that sent its tag."""
        with self._lock:
            entry = self._launches.pop(str(answer.get("tag")), None)
        if entry is None:
            self.binary.logger.error("flare-slurm wait --follow: an answer to no launch of this parent: tag %r", answer.get("tag"))
            return
        done, slot, _ = entry
        data = answer.get("data")
        if answer.get("status") == "ok" and isinstance(data, dict):
            slot["data"] = data
        else:
            raw_error = answer.get("error")
            error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
            code = error.get("code")
            slot.update(error=_failure_message("launch", answer, error), code=code if isinstance(code, str) else "")
        done.set()

    def _log(self, proc: "subprocess.Popen[bytes]") -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.strip():
                self.binary.logger.info("flare-slurm wait: %s", line)


class FlareSlurmJobHandle(JobHandleSpec):
    """One job as flare-slurm knows it: every answer comes from the binary."""

    def __init__(self, binary: _Binary, job_id: str, slurm_job_id: str, follower: "_Follower"):
        self.binary = binary
        self.follower = follower
        self.job_id = job_id
        self.slurm_job_id = slurm_job_id
        self._result: Optional[int] = None
        self._lock = threading.Lock()

    def _record(self, data: dict[str, Any]) -> Optional[int]:
        code = _return_code(data)
        if code is not None:
            with self._lock:
                if self._result is None:
                    self._result = code
        return code

    def poll(self) -> int:
        if self._result is not None:
            return self._result
        try:
            data = self.binary.call("status", ["--job-id", self.job_id])
        except FlareSlurmError as e:
            self.binary.logger.error("job %s stays unfinished: %s", self.job_id, e)
            return int(JobReturnCode.UNKNOWN)
        code = self._record(data)
        return int(JobReturnCode.UNKNOWN) if code is None else code

    def wait(self) -> None:
        stop = threading.Event()
        while self._result is None:
            try:
                self._record(self.follower.wait(self.job_id))
            except FlareSlurmError as e:
                if e.code in PERMANENT_ERRORS:
                    # The workspace knows no such job (neither its dir nor a
                    # recorded result): asking again every RETRY_INTERVAL
                    # forever would change nothing.
                    self.binary.logger.error("job %s cannot be watched: %s", self.job_id, e)
                    with self._lock:
                        if self._result is None:
                            self._result = int(JobReturnCode.INFRASTRUCTURE_ERROR)
                    return
                self.binary.logger.error("waiting for job %s failed, trying again: %s", self.job_id, e)
                stop.wait(RETRY_INTERVAL)

    def terminate(self) -> None:
        self._cancel([], "cancelling")

    def _terminate_for_heartbeat_cleanup(self) -> None:
        """NVFlare's clean-up of a job whose heartbeat was lost: not a user
        abort, so the job ends with 104 as with NVFlare's own launcher."""
        self._cancel(["--cleanup"], "cleaning up")

    def _cancel(self, args: list[str], what: str) -> None:
        if self._result is not None:
            return
        try:
            self._record(self.binary.call("cancel", ["--job-id", self.job_id, *args]))
        except FlareSlurmError as e:
            self.binary.logger.error("%s job %s: %s", what, self.job_id, e)


class FlareSlurmJobLauncher(JobLauncherSpec):
    """Claims every job of the site at BEFORE_JOB_LAUNCH, as NVFlare's Slurm launcher does."""

    ROLE = ""

    def __init__(self, *, workspace_path: str, flare_slurm: str, **settings: Any):
        # settings are the Slurm launcher settings prepare wrote beside
        # these two: the binary reads them from the same file.
        super().__init__()
        if not self.ROLE:
            raise TypeError("use ClientFlareSlurmJobLauncher or ServerFlareSlurmJobLauncher")
        self.workspace_path = workspace_path
        self.flare_slurm = flare_slurm
        self.child_process = os.environ.get(CHILD_PROCESS_ENV) == "1"
        self.binary = _Binary(flare_slurm, workspace_path, self.logger)
        self.follower = _Follower(self.binary)

    def handle_event(self, event_type: str, fl_ctx: FLContext) -> None:
        if self.child_process:
            return
        if event_type == EventType.SYSTEM_BOOTSTRAP:
            self.binary.call("bootstrap-check", [])
            self._report_jobs_left_running()
        elif event_type == EventType.BEFORE_JOB_LAUNCH:
            add_launcher(self, fl_ctx)
        elif event_type == EventType.SYSTEM_END:
            self.follower.close()

    def _report_jobs_left_running(self) -> None:
        """Report the jobs a previous process of this parent left running.

        NVFlare does not resume them (it never calls launch_job for them
        again) and, like NVFlare's own launcher, the bridge does not cancel
        surviving allocations: it names each one and how to watch or stop it.
        """
        try:
            data = self.binary.call("status", ["--all-live"])
        except FlareSlurmError as e:
            self.logger.error("cannot list the jobs a previous parent process left running: %s", e)
            return
        jobs = data.get("jobs")
        for job in jobs if isinstance(jobs, list) else []:
            if isinstance(job, dict):
                job_id = job.get("job_id")
                self.logger.warning(
                    "job %s (Slurm job %s, %s) was launched by a previous process of this parent and has not "
                    "ended; NVFlare does not resume it. Watch it: %s wait --workspace %s --job-id %s; stop it: "
                    "%s cancel --workspace %s --job-id %s (or cancel --all-live)",
                    job_id, job.get("slurm_job_id"), job.get("state"), self.flare_slurm, self.workspace_path,
                    job_id, self.flare_slurm, self.workspace_path, job_id)

    def launch_job(self, job_meta: dict[str, Any], fl_ctx: FLContext) -> JobHandleSpec:
        if self.child_process:
            raise FlareSlurmError(f"nested job launch refused: {CHILD_PROCESS_ENV}=1 (this is a flare-slurm worker)")
        request = self.launch_request(job_meta, fl_ctx)
        # The follower launches as `launch --request - --attach
        # --no-bootstrap`: a job this workspace already runs (launched
        # before a restart of this parent) is reported, not submitted
        # again; bootstrap-check ran at SYSTEM_BOOTSTRAP (probing Slurm
        # again for every job cost two commands, three slurmdbd RPCs).
        try:
            data = self.follower.launch(request)
        except _FollowerGone as e:
            # A launch process instead: --attach reports the job when the
            # follower submitted it before it ended (its handle written).
            self.logger.warning("job %s: %s; launching it with a flare-slurm launch process", request["job_id"], e)
            data = self.binary.call("launch", ["--request", "-", "--attach", "--no-bootstrap"],
                                    stdin=json.dumps(request, default=str).encode("utf-8"))
        handle = FlareSlurmJobHandle(self.binary, request["job_id"], str(data.get("slurm_job_id", "")), self.follower)
        if data.get("attached") is True:
            self.logger.info("job %s: re-attached to Slurm job %s, launched before this parent started",
                             handle.job_id, handle.slurm_job_id)
        return handle

    def launch_request(self, job_meta: dict[str, Any], fl_ctx: FLContext) -> dict[str, Any]:
        """The launch request of flare-slurm (contract §12), as the parent gave it."""
        job_args = fl_ctx.get_prop(FLContextKey.JOB_PROCESS_ARGS) or {}
        pairs = {}
        for name, entry in job_args.items():
            # flare-slurm runs the role's worker module itself, as NVFlare's launcher does.
            if name == JobProcessArgs.EXE_MODULE or not entry or entry[1] is None:
                continue
            flag, value = entry
            pairs[name] = [str(flag), str(value)]
        return {
            "job_id": job_meta.get(JobConstants.JOB_ID),
            "site": fl_ctx.get_identity_name(),
            "role": self.ROLE,
            "meta": job_meta,
            "job_args": pairs,
        }


class ClientFlareSlurmJobLauncher(FlareSlurmJobLauncher):
    ROLE = "client"


class ServerFlareSlurmJobLauncher(FlareSlurmJobLauncher):
    ROLE = "server"
