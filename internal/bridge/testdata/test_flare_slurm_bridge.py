"""Unit tests of flare_slurm_bridge against NVFlare's own launcher interface.

Run by bridge/python_test.go: PYTHONPATH holds the bridge module, NVFLARE_SRC
the pinned NVFlare tree. The flare-slurm binary is a fake here (it answers
what each test scripts and records every call): these tests pin how the
bridge builds its calls and reads the answers, not the runtime.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import sys
import tempfile
import threading
import types
import unittest

# nvflare/__init__.py imports the job API, which needs cryptography >= 45;
# the launcher interface does not. Import the package's modules directly.
_pkg = types.ModuleType("nvflare")
_pkg.__path__ = [os.path.join(os.environ["NVFLARE_SRC"], "nvflare")]
sys.modules["nvflare"] = _pkg

from nvflare.apis.event_type import EventType  # noqa: E402
from nvflare.apis.fl_component import FLComponent  # noqa: E402
from nvflare.apis.fl_constant import FLContextKey  # noqa: E402
from nvflare.apis.fl_context import FLContextManager  # noqa: E402
from nvflare.apis.job_launcher_spec import JobHandleSpec, JobLauncherSpec, JobProcessArgs, JobReturnCode  # noqa: E402

import flare_slurm_bridge as B  # noqa: E402

FAKE = """#!{python}
import json, os, signal, sys, time
here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, "script.json")
if sys.argv[1] == "wait" and "--follow" in sys.argv:
    with open(script) as f:
        answers = json.load(f)
    if "follower_fails" in answers:
        # A follower that cannot start (a workspace it cannot open): its
        # error envelope, one line, and exit 1.
        print(answers["follower_fails"], flush=True)
        sys.exit(1)
    if answers.get("hello", True):
        print(json.dumps({{"status": "ok", "command": "hello", "data": {{"launch_lines": 1}}}}), flush=True)
    # One answer per job id read: a line to print, or an exit.
    for line in sys.stdin:
        job = line.strip()
        if job.startswith(("launch ", "stop ")):
            # A launch line (launch TAG ENVIRON REQUEST) or a stop line (stop TAG).
            kind, tag, rest = (job.split(" ", 2) + [""])[:3]
            environ = dict(kv.split("=", 1) for kv in json.JSONDecoder().raw_decode(rest)[0]) if kind == "launch" else {{}}
            request = rest[json.JSONDecoder().raw_decode(rest)[1]:].strip() if kind == "launch" else ""
            call = {{"argv": sys.argv[1:], "exe": sys.argv[0], "line": kind, "tag": tag, "stdin": request,
                     "secret_source": environ.get("STUDY_SECRET_SOURCE")}}
            with open(os.path.join(here, "calls.jsonl"), "a") as f:
                f.write(json.dumps(call) + "\\n")
            if kind == "stop":
                continue
            with open(script) as f:
                answers = json.load(f)
            queue = answers.get("follow_launch") or answers.get("launch") or [{{"stdout": "", "exit": 97}}]
            answer = queue.pop(0) if len(queue) > 1 else queue[0]
            with open(script, "w") as f:
                json.dump(answers, f)
            if "follower_exit" in answer:
                sys.exit(answer["follower_exit"])
            if answer.get("until_stopped"):
                # Answer only after the bridge's stop line (at most 20 s).
                stop = sys.stdin.readline()
                with open(os.path.join(here, "calls.jsonl"), "a") as f:
                    f.write(json.dumps({{"argv": sys.argv[1:], "exe": sys.argv[0], "line": "stop", "stdin": stop.strip()}}) + "\\n")
                if answer.get("exit_after_stop") is not None:
                    sys.exit(answer["exit_after_stop"])
            try:
                out = json.loads(answer["stdout"])
            except ValueError:
                sys.exit(answer.get("exit", 97))  # no JSON answer: the follower dies
            out.update(command="launch", tag=tag)
            print(json.dumps(out), flush=True)
            continue
        with open(os.path.join(here, "calls.jsonl"), "a") as f:
            f.write(json.dumps({{"argv": sys.argv[1:], "exe": sys.argv[0], "stdin": job}}) + "\\n")
        with open(script) as f:
            answers = json.load(f)
        queue = answers.get("follow", {{}}).get(job) or [{{"exit": 97}}]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        with open(script, "w") as f:
            json.dump(answers, f)
        if "exit" in answer:
            sys.exit(answer["exit"])
        if "hold" in answer:
            # stderr first, then wait (at most 20 s) until the test says go on
            sys.stderr.write(answer.get("stderr", ""))
            sys.stderr.flush()
            deadline = time.monotonic() + 20
            while not os.path.exists(answer["hold"]) and time.monotonic() < deadline:
                time.sleep(0.02)
        print(json.dumps(answer["line"]), flush=True)
    sys.exit(0)
stdin = sys.stdin.read()
with open(os.path.join(here, "calls.jsonl"), "a") as f:
    f.write(json.dumps({{"argv": sys.argv[1:], "exe": sys.argv[0], "stdin": stdin,
                         "secret_source": os.environ.get("STUDY_SECRET_SOURCE")}}) + "\\n")
with open(script) as f:
    answers = json.load(f)
queue = answers.get(sys.argv[1]) or [{{"stdout": "", "exit": 97}}]
answer = queue.pop(0) if len(queue) > 1 else queue[0]
with open(script, "w") as f:
    json.dump(answers, f)
if answer.get("busy"):
    # A launch whose sbatch runs: SIGTERM is noted, not obeyed (as
    # flare-slurm launch does), and the answer comes once the work is done.
    termed = []
    signal.signal(signal.SIGTERM, lambda *a: termed.append(1))
    # The test started us with SIGTERM blocked (inherited across exec): a
    # SIGTERM that came during start-up was held, and is delivered now.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGTERM}})
    deadline = time.time() + 30
    while not termed and time.time() < deadline:
        time.sleep(0.05)
    with open(os.path.join(here, "termed"), "w") as f:
        f.write(str(len(termed)))
    time.sleep(answer["busy"])
if "hold" in answer:
    # stderr first, then wait (at most 20 s) until the test says go on
    sys.stderr.write(answer.get("stderr", ""))
    sys.stderr.flush()
    deadline = time.monotonic() + 20
    while not os.path.exists(answer["hold"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    sys.stdout.write(answer["stdout"])
    sys.exit(answer["exit"])
sys.stdout.write(answer["stdout"])
sys.stderr.write(answer.get("stderr", ""))
sys.exit(answer["exit"])
"""


def ok(data: dict, exit_code: int = 0) -> dict:
    return {"stdout": json.dumps({"status": "ok", "data": data}), "exit": exit_code}


def error(code: str, message: str, hint: str = "", problems=None) -> dict:
    return {"stdout": json.dumps({"status": "error", "error": {"code": code, "message": message, "hint": hint,
                                                                "problems": problems or []}}), "exit": 1}


def status(state: str, terminal: bool, rc: int) -> dict:
    return {"job_id": "job-1", "slurm_job_id": "4242", "state": state, "terminal": terminal, "return_code": rc}


class BridgeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.binary = os.path.join(self.dir, "flare-slurm")
        with open(self.binary, "w") as f:
            f.write(FAKE.format(python=sys.executable))
        os.chmod(self.binary, stat.S_IRWXU)
        self.workspace = "/lustre/ws/site-1"
        os.environ.pop(B.CHILD_PROCESS_ENV, None)
        self.launcher = B.ClientFlareSlurmJobLauncher(
            workspace_path=self.workspace, flare_slurm=self.binary, sandbox="none", python_path="/usr/bin/python3",
            executables={}, internal_port=8102, poll_interval=10.0)
        self.ctx = FLContextManager(identity_name="site-1").new_context()

    def tearDown(self):
        self.launcher.follower.close()

    def script(self, **answers):
        with open(os.path.join(self.dir, "script.json"), "w") as f:
            json.dump(answers, f)

    def calls(self) -> list:
        path = os.path.join(self.dir, "calls.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f]

    def kinds(self) -> list:
        """What each call was: the command, or "launch-line"/"stop-line" for a line to the follower."""
        return [c["line"] + "-line" if "line" in c else c["argv"][0] for c in self.calls()]

    def job_args(self) -> dict:
        return {
            JobProcessArgs.EXE_MODULE: ("-m", "nvflare.private.fed.app.client.worker_process"),
            JobProcessArgs.JOB_ID: ("-n", "job-1"),
            JobProcessArgs.CLIENT_NAME: ("-c", "site-1"),
            JobProcessArgs.AUTH_TOKEN: ("-t", "tok-SECRET"),
            JobProcessArgs.TOKEN_SIGNATURE: ("-ts", "sig-SECRET"),
            JobProcessArgs.SSID: ("-d", "ssid-SECRET"),
            JobProcessArgs.WORKSPACE: ("-m", self.workspace),
            JobProcessArgs.PARENT_URL: ("-p", "tcp://localhost:8102"),
            JobProcessArgs.TARGET: ("-g", "server:8002"),
            JobProcessArgs.STARTUP_CONFIG_FILE: ("-s", "fed_client.json"),
            JobProcessArgs.OPTIONS: ("--set", " print_conf=True"),
            JobProcessArgs.PARENT_CONN_SEC: ("--parent_conn_sec", None),
        }

    def launch(self, meta=None):
        self.ctx.set_prop(FLContextKey.JOB_PROCESS_ARGS, self.job_args(), private=True, sticky=False)
        return self.launcher.launch_job(meta or {"job_id": "job-1", "name": "hello"}, self.ctx)

    def test_is_nvflares_interface(self):
        self.assertIsInstance(self.launcher, JobLauncherSpec)
        self.assertIsInstance(self.launcher, FLComponent)
        self.assertIsInstance(B.ServerFlareSlurmJobLauncher(workspace_path="/w", flare_slurm="/b"), JobLauncherSpec)
        with self.assertRaises(TypeError):
            B.FlareSlurmJobLauncher(workspace_path="/w", flare_slurm="/b")
        self.assertTrue(issubclass(B.FlareSlurmJobHandle, JobHandleSpec))

    def test_claims_every_job_before_launch(self):
        self.launcher.handle_event(EventType.BEFORE_JOB_LAUNCH, self.ctx)
        self.assertEqual(self.ctx.get_prop(FLContextKey.JOB_LAUNCHER), [self.launcher])
        self.launcher.handle_event(EventType.START_RUN, self.ctx)
        self.assertEqual(self.ctx.get_prop(FLContextKey.JOB_LAUNCHER), [self.launcher])
        self.assertEqual(self.calls(), [])

    def test_inert_in_a_worker(self):
        os.environ[B.CHILD_PROCESS_ENV] = "1"
        try:
            worker = B.ClientFlareSlurmJobLauncher(workspace_path=self.workspace, flare_slurm=self.binary)
        finally:
            del os.environ[B.CHILD_PROCESS_ENV]
        worker.handle_event(EventType.SYSTEM_BOOTSTRAP, self.ctx)
        worker.handle_event(EventType.BEFORE_JOB_LAUNCH, self.ctx)
        self.assertIsNone(self.ctx.get_prop(FLContextKey.JOB_LAUNCHER))
        self.ctx.set_prop(FLContextKey.JOB_PROCESS_ARGS, self.job_args(), private=True, sticky=False)
        with self.assertRaisesRegex(B.FlareSlurmError, "nested job launch refused"):
            worker.launch_job({"job_id": "job-1"}, self.ctx)
        self.assertEqual(self.calls(), [])

    def test_bootstrap_runs_bootstrap_check(self):
        self.script(**{"bootstrap-check": [ok({"role": "client"})], "status": [ok({"jobs": []})]})
        self.launcher.handle_event(EventType.SYSTEM_BOOTSTRAP, self.ctx)
        self.assertEqual(self.calls()[0]["argv"], ["bootstrap-check", "--workspace", self.workspace, "--json"])
        self.script(**{"bootstrap-check": [error("bootstrap_failed", "sacct does not answer", "start slurmdbd")]})
        with self.assertRaisesRegex(B.FlareSlurmError, r"flare-slurm bootstrap-check: sacct does not answer \(start slurmdbd\)"):
            self.launcher.handle_event(EventType.SYSTEM_BOOTSTRAP, self.ctx)
        self.assertEqual([c["argv"][0] for c in self.calls()], ["bootstrap-check", "status", "bootstrap-check"])

    def test_bootstrap_reports_jobs_left_running(self):
        # NVFlare never resumes a previous parent process's jobs, and (like
        # NVFlare's own launcher) the bridge does not cancel them: it names
        # each one and how to watch or stop it, and changes nothing.
        left = dict(status("RUNNING", False, 127), job_id="job-0", slurm_job_id="4100")
        self.script(**{"bootstrap-check": [ok({"role": "client"})], "status": [ok({"jobs": [left]})]})
        with self.assertLogs(self.launcher.logger, "WARNING") as logs:
            self.launcher.handle_event(EventType.SYSTEM_BOOTSTRAP, self.ctx)
        self.assertEqual([c["argv"] for c in self.calls()][1], ["status", "--workspace", self.workspace, "--all-live", "--json"])
        self.assertNotIn("cancel", [c["argv"][0] for c in self.calls()])
        self.assertIn("job job-0 (Slurm job 4100, RUNNING) was launched by a previous process", logs.output[0])
        self.assertIn("cancel --workspace %s --job-id job-0" % self.workspace, logs.output[0])
        # A failing listing is logged, and the parent still starts.
        self.script(**{"bootstrap-check": [ok({"role": "client"})], "status": [error("status_failed", "squeue does not answer")]})
        with self.assertLogs(self.launcher.logger, "ERROR") as logs:
            self.launcher.handle_event(EventType.SYSTEM_BOOTSTRAP, self.ctx)
        self.assertIn("cannot list the jobs a previous parent process left running", logs.output[0])

    def test_launch_sends_the_request_on_stdin(self):
        self.script(launch=[ok({"slurm_job_id": "4242", "job_name": "nvfl-site-1-0a1b", "job_dir": "/j", "notes": []})])
        os.environ["STUDY_SECRET_SOURCE"] = "from-the-parent"
        try:
            meta = {"job_id": "job-1", "name": "hello", "launcher_spec": {"site-1": {"slurm": {"time": "00:10:00"}}}}
            handle = self.launch(meta)
        finally:
            del os.environ["STUDY_SECRET_SOURCE"]
        self.assertIsInstance(handle, JobHandleSpec)
        self.assertEqual(handle.slurm_job_id, "4242")
        call = self.calls()[0]
        # One line to the parent's follower, which launches as `launch
        # --request - --attach --no-bootstrap` would.
        self.assertEqual(call["line"], "launch")
        self.assertEqual(call["argv"], ["wait", "--workspace", self.workspace, "--follow", "--json"])
        self.assertNotIn("SECRET", " ".join(call["argv"]))
        self.assertEqual(call["secret_source"], "from-the-parent")  # the environment reaches the binary
        request = json.loads(call["stdin"])
        self.assertEqual(request, {
            "job_id": "job-1", "site": "site-1", "role": "client", "meta": meta,
            "job_args": {
                "job_id": ["-n", "job-1"], "client_name": ["-c", "site-1"], "auth_token": ["-t", "tok-SECRET"],
                "auth_signature": ["-ts", "sig-SECRET"], "ssid": ["-d", "ssid-SECRET"],
                "workspace": ["-m", self.workspace], "parent_url": ["-p", "tcp://localhost:8102"],
                "target": ["-g", "server:8002"], "startup_config_file": ["-s", "fed_client.json"],
                "options": ["--set", " print_conf=True"],
            },
        })

    def test_attached_job_is_watched_like_a_launched_one(self):
        self.script(launch=[ok({"slurm_job_id": "4242", "attached": True})], status=[ok(status("RUNNING", False, 127))])
        with self.assertLogs(self.launcher.logger, "INFO") as logs:
            handle = self.launch()
        self.assertEqual(handle.slurm_job_id, "4242")
        self.assertIn("re-attached to Slurm job 4242", "\n".join(logs.output))
        self.assertEqual(handle.poll(), JobReturnCode.UNKNOWN)

    def test_server_role(self):
        server = B.ServerFlareSlurmJobLauncher(workspace_path=self.workspace, flare_slurm=self.binary)
        self.ctx.set_prop(FLContextKey.JOB_PROCESS_ARGS, {JobProcessArgs.JOB_ID: ("-n", "job-1")}, private=True, sticky=False)
        self.script(launch=[ok({"slurm_job_id": "7"})])
        server.launch_job({"job_id": "job-1"}, self.ctx)
        self.assertEqual(json.loads(self.calls()[0]["stdin"])["role"], "server")

    def test_launch_failure_carries_the_binarys_words(self):
        self.script(launch=[error("invalid_request", "launch request - cannot be compiled", "fix the problems listed",
                                  [{"file": "-", "path": "meta.launcher_spec.site-1.slurm.nodes", "message": "must be >= 1"}])])
        with self.assertRaises(B.FlareSlurmError) as e:
            self.launch()
        self.assertIn("flare-slurm launch: launch request - cannot be compiled", str(e.exception))
        self.assertIn("meta.launcher_spec.site-1.slurm.nodes: must be >= 1", str(e.exception))
        self.assertIn("(fix the problems listed)", str(e.exception))
        self.script(launch=[{"stdout": "panic: boom", "exit": 2, "stderr": "goroutine 1"}])
        with self.assertRaisesRegex(B.FlareSlurmError, "exited 2 without a JSON answer: goroutine 1"):
            self.launch()
        launcher = B.ClientFlareSlurmJobLauncher(workspace_path=self.workspace, flare_slurm=self.dir + "/missing")
        self.ctx.set_prop(FLContextKey.JOB_PROCESS_ARGS, self.job_args(), private=True, sticky=False)
        with self.assertRaisesRegex(B.FlareSlurmError, "cannot run .*/missing"):
            launcher.launch_job({"job_id": "job-1"}, self.ctx)

    def test_a_call_without_a_json_answer_is_bounded_too(self):
        # Review finding L3: stderr went whole into the exception.
        self.script(launch=[{"stdout": "", "stderr": "x" * 100_000, "exit": 1}])
        with self.assertRaises(B.FlareSlurmError) as caught:
            self.launch()
        message = str(caught.exception)
        self.assertIn("without a JSON answer", message)
        self.assertLess(len(message), B.MAX_MESSAGE_CHARS + 100)
        self.assertIn("more characters not shown", message)

    def test_failure_message_is_bounded(self):
        # Issue 25 item 7: a request with thousands of problems made one
        # exception of megabytes; the bridge names the first few, counts
        # the rest, and cuts the message.
        problems = [{"file": "-", "path": "meta.launcher_spec.site-1.slurm.k%d" % i, "message": "x" * 500}
                    for i in range(101)]
        self.script(launch=[error("invalid_request", "launch request - cannot be compiled", "fix the problems listed", problems)])
        with self.assertRaises(B.FlareSlurmError) as e:
            self.launch()
        text = str(e.exception)
        self.assertLessEqual(len(text), B.MAX_MESSAGE_CHARS + 80)
        self.assertIn("slurm.k0: ", text)
        self.assertNotIn("slurm.k%d:" % B.MAX_MESSAGE_PROBLEMS, text)
        self.assertIn("more characters not shown", text)
        few = [{"file": "-", "path": "p%d" % i, "message": "m"} for i in range(B.MAX_MESSAGE_PROBLEMS + 5)]
        self.script(launch=[error("invalid_request", "bad", "fix", few)])
        with self.assertRaises(B.FlareSlurmError) as e:
            self.launch()
        self.assertIn("... 5 more problem(s) not shown", str(e.exception))
        self.assertTrue(str(e.exception).endswith("(fix)"))

    def test_untrusted_binary_is_never_run(self):
        # Issue 25 item 9: the binary reads every job's credentials; one in a
        # directory another account can write is refused before each call,
        # at bootstrap and at launch alike, and never run.
        os.chmod(self.dir, 0o777)
        try:
            with self.assertRaisesRegex(B.FlareSlurmError, "not run: the flare-slurm binary is not trusted: .* writable by every account"):
                self.launcher.handle_event(EventType.SYSTEM_BOOTSTRAP, self.ctx)
            with self.assertRaisesRegex(B.FlareSlurmError, "flare-slurm launch: not run"):
                self.launch()
        finally:
            os.chmod(self.dir, 0o700)
        self.assertEqual(self.calls(), [])
        self.assertIsNone(B.untrusted(self.binary))

    def test_the_checked_binary_is_the_one_run(self):
        # Review finding H2: the bridge checked the resolved path and ran the
        # recorded one, whose links the kernel resolved again. It runs the
        # path it checked.
        links = os.path.join(self.dir, "links")
        os.mkdir(links, 0o755)
        link = os.path.join(links, "flare-slurm")
        os.symlink(self.binary, link)
        self.launcher.binary.path = link
        self.script(launch=[ok({"slurm_job_id": "4242", "job_name": "nvfl-site-1-0a1b", "job_dir": "/j", "notes": []})],
                    follow={"job-1": [{"line": {"status": "ok", "data": status("COMPLETED", True, 0)}}]})
        handle = self.launch()
        # The follower (one `wait --follow` per parent) runs it too.
        self.assertIsNone(handle.wait())
        self.assertEqual(self.kinds(), ["launch-line", "wait"])
        self.assertEqual([c["exe"] for c in self.calls()], [os.path.realpath(self.binary)] * 2)

    def test_launch_given_up_is_stopped_not_killed(self):
        # Issue 25 item 11: the bridge's call timeout killed launch while
        # sbatch ran, leaving a queued job with live credentials and no
        # handle. It asks the binary to stop (SIGTERM) and reads its answer:
        # the job's handle comes back.
        # The fake binary starts with SIGTERM blocked (this thread's mask,
        # inherited across fork and exec) and unblocks it once its handler is
        # in place, so the bridge's SIGTERM after 0.5 s is handled however
        # slowly the fake's Python starts on a loaded machine.
        saved = B.CALL_TIMEOUT
        B.CALL_TIMEOUT = 0.5
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            answer = ok({"slurm_job_id": "4242", "job_name": "nvfl-site-1-0a1b", "job_dir": "/j", "notes": []})
            answer["busy"] = 0.5
            # The process path: the follower ends before it answers.
            self.script(follow_launch=[{"follower_exit": 3}], launch=[answer])
            with self.assertLogs(self.launcher.logger, "WARNING") as logs:
                handle = self.launch()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            B.CALL_TIMEOUT = saved
        self.assertEqual(handle.slurm_job_id, "4242")
        with open(os.path.join(self.dir, "termed")) as f:
            self.assertEqual(f.read(), "1")  # SIGTERM, and it was not killed
        self.assertIn("asking it to stop (SIGTERM)", "\n".join(logs.output))

    def test_launch_given_up_in_the_follower_is_stopped(self):
        # The follower's launch that does not answer within CALL_TIMEOUT gets
        # a stop line (SIGTERM's part for a launch process: stop before
        # sbatch, or finish with the handle) and its answer is then read.
        saved = B.CALL_TIMEOUT
        B.CALL_TIMEOUT = 0.5
        try:
            answer = ok({"slurm_job_id": "4242", "job_name": "nvfl-site-1-0a1b", "job_dir": "/j", "notes": []})
            answer["until_stopped"] = True
            self.script(launch=[answer])
            with self.assertLogs(self.launcher.logger, "WARNING") as logs:
                handle = self.launch()
        finally:
            B.CALL_TIMEOUT = saved
        self.assertEqual(handle.slurm_job_id, "4242")
        self.assertEqual(self.kinds(), ["launch-line", "stop-line"])
        self.assertEqual(self.calls()[1]["stdin"], "stop 1")
        self.assertIn("did not answer within 0 s: asking it to stop", "\n".join(logs.output).replace("0.5", "0"))

    def test_a_follower_that_ends_after_the_stop_is_an_error_not_a_relaunch(self):
        # Once the bridge gave up on a launch, a follower that then ends is
        # the launch's failure: no launch process starts it again.
        saved = B.CALL_TIMEOUT
        B.CALL_TIMEOUT = 0.5
        try:
            self.script(follow_launch=[{"until_stopped": True, "exit_after_stop": 3}],
                        launch=[ok({"slurm_job_id": "4242"})])
            with self.assertRaisesRegex(B.FlareSlurmError, r"given up after 0 s, and flare-slurm wait --follow ended \(exit 3\)"):
                self.launch()
        finally:
            B.CALL_TIMEOUT = saved
        self.assertEqual(self.kinds(), ["launch-line", "stop-line"])

    def test_an_older_binary_without_launch_lines_launches_by_process(self):
        # A follower whose first line is not the hello (a flare-slurm older
        # than the bridge) gets no launch line: it would read it as a job id.
        # After HELLO_TIMEOUT the launch runs as a process, and later ones at once.
        saved = B.HELLO_TIMEOUT
        B.HELLO_TIMEOUT = 0.5
        try:
            self.script(hello=False, launch=[ok({"slurm_job_id": "4242"})])
            self.launch()
            self.launch({"job_id": "job-2", "name": "hello"})
        finally:
            B.HELLO_TIMEOUT = saved
        self.assertEqual(self.kinds(), ["launch", "launch"])

    def test_a_launch_carries_the_parents_environment_as_it_is_then(self):
        # The follower started with the first launch; the parent's
        # environment changed after it: the next launch sees the change, as
        # a launch process started then would.
        self.script(launch=[ok({"slurm_job_id": "4242"})])
        self.launch()
        os.environ["STUDY_SECRET_SOURCE"] = "rotated"
        try:
            self.launch({"job_id": "job-2", "name": "hello"})
        finally:
            del os.environ["STUDY_SECRET_SOURCE"]
        self.assertEqual([c["secret_source"] for c in self.calls()], [None, "rotated"])
        self.assertEqual(len({c["argv"][0] for c in self.calls()}), 1)  # one follower

    def test_a_request_python_writes_with_nan_reaches_the_binary(self):
        # json.dumps writes NaN, which Python's json.loads (and flare-slurm's
        # reader) accept: the request goes to the follower as written.
        self.script(launch=[ok({"slurm_job_id": "4242"})])
        self.launch({"job_id": "job-1", "name": "hello", "ratio": float("nan")})
        self.assertIn('"ratio": NaN', self.calls()[0]["stdin"])

    def test_launch_falls_back_to_a_process_when_the_follower_ends(self):
        # A follower that ends before it answers: the launch runs as a
        # launch process with --attach (which reports the job if the
        # follower submitted it); the next wait starts a new follower.
        self.script(follow_launch=[{"follower_exit": 3}],
                    launch=[ok({"slurm_job_id": "4242", "attached": True})],
                    follow={"job-1": [self.follow_line(status("COMPLETED", True, 0))]})
        with self.assertLogs(self.launcher.logger, "WARNING") as logs:
            handle = self.launch()
        self.assertEqual(handle.slurm_job_id, "4242")
        self.assertIn("ended (exit 3) before it answered the launch; launching it with a flare-slurm launch process",
                      "\n".join(logs.output))
        launch = [c for c in self.calls() if c["argv"][0] == "launch"]
        self.assertEqual(launch[0]["argv"], ["launch", "--workspace", self.workspace, "--request", "-", "--attach", "--no-bootstrap", "--json"])
        self.assertEqual(json.loads(launch[0]["stdin"])["job_id"], "job-1")
        self.assertIsNone(handle.wait())
        self.assertEqual(self.kinds(), ["launch-line", "launch", "wait"])

    def test_a_follower_that_cannot_start_says_why_in_the_log(self):
        # wait --follow --json that cannot open its workspace prints its
        # error envelope as one line and exits: the parent's log has its
        # message and hint, not an unreadable line, and the launch runs as
        # a process (whose own answer is the error the launch raises).
        failed = error("invalid_workspace", "workspace /lustre/ws/site-1 is not a usable prepared workspace",
                       "pass the --output directory of 'flare-slurm prepare'")
        self.script(follower_fails=failed["stdout"], launch=[ok({"slurm_job_id": "4242"})])
        with self.assertLogs(self.launcher.logger, "WARNING") as logs:
            handle = self.launch()
        self.assertEqual(handle.slurm_job_id, "4242")
        log = "\n".join(logs.output)
        self.assertIn("flare-slurm wait --follow: workspace /lustre/ws/site-1 is not a usable prepared workspace "
                      "(pass the --output directory of 'flare-slurm prepare')", log)
        self.assertNotIn("unreadable line", log)
        self.assertEqual(self.kinds(), ["launch"])

    def test_wait_stops_on_a_permanent_error(self):
        # Issue 25 item 11: an unknown job was asked about every 10 s
        # forever. no_such_job ends the wait with 104 (infrastructure).
        # The follower answers with an error line for the job.
        line = json.loads(error("no_such_job", "job job-1: no such job in this workspace")["stdout"])
        line["data"] = {"job_id": "job-1"}
        self.script(launch=[ok({"slurm_job_id": "4242"})], follow={"job-1": [{"line": line}]})
        handle = self.launch()
        with self.assertLogs(self.launcher.logger, "ERROR"):
            handle.wait()
        self.assertEqual(handle.poll(), JobReturnCode.INFRASTRUCTURE_ERROR)
        self.assertEqual(self.kinds(), ["launch-line", "wait"])

    def test_poll(self):
        self.script(launch=[ok({"slurm_job_id": "4242"})],
                    status=[ok(status("RUNNING", False, 127)), ok(status("COMPLETED", True, 0)), error("x", "y")])
        handle = self.launch()
        self.assertEqual(handle.poll(), JobReturnCode.UNKNOWN)
        self.assertEqual(handle.poll(), 0)
        self.assertEqual(handle.poll(), 0)  # terminal: answered without asking again
        statuses = [c["argv"] for c in self.calls() if c["argv"][0] == "status"]
        self.assertEqual(statuses, [["status", "--workspace", self.workspace, "--job-id", "job-1", "--json"]] * 2)

    def test_poll_failure_is_unknown(self):
        self.script(launch=[ok({"slurm_job_id": "4242"})], status=[error("status_failed", "squeue unavailable")])
        self.assertEqual(self.launch().poll(), JobReturnCode.UNKNOWN)

    def follow_line(self, data: dict) -> dict:
        return {"line": {"status": "ok", "data": data}}

    def test_wait_until_terminal(self):
        # One `wait --follow` process watches the parent's jobs: the job id
        # goes to its standard input, the result comes back as one line.
        self.script(launch=[ok({"slurm_job_id": "4242"})],
                    follow={"job-1": [self.follow_line(status("FAILED", True, 103))]})
        handle = self.launch()
        self.assertIsNone(handle.wait())
        self.assertEqual(handle.poll(), 103)  # the result: no status call
        self.assertEqual(self.kinds(), ["launch-line", "wait"])
        self.assertEqual({k: self.calls()[1][k] for k in ("argv", "stdin")},
                         {"argv": ["wait", "--workspace", self.workspace, "--follow", "--json"], "stdin": "job-1"})

    def test_wait_logs_why_the_job_is_pending_while_it_waits(self):
        """What wait --follow says on stderr (why a job is pending) reaches the
        parent's log as it is written, not when the job ends (issue 28 item 10)."""
        go_on = os.path.join(self.dir, "go-on")
        pending = ("flare-slurm: job job-1 (Slurm job 4242) pending for 30s of its 10m0s pending timeout; "
                   "Slurm's reason: Priority (jobs of higher priority are ahead of it in the queue)\n")
        self.script(launch=[ok({"slurm_job_id": "4242"})],
                    follow={"job-1": [dict(self.follow_line(status("COMPLETED", True, 0)), stderr=pending, hold=go_on)]})
        handle = self.launch()
        seen = threading.Event()

        class Watch(logging.Handler):
            def emit(self, record):
                if "Slurm's reason: Priority" in record.getMessage():
                    seen.set()

        watch = Watch()
        self.launcher.logger.addHandler(watch)
        self.launcher.logger.setLevel(logging.INFO)
        try:
            waiter = threading.Thread(target=handle.wait, daemon=True)
            waiter.start()
            self.assertTrue(seen.wait(20), "the pending reason was not logged while the wait ran")
            self.assertTrue(waiter.is_alive(), "the wait ended before the test let it")
            open(go_on, "w").close()
            waiter.join(20)
            self.assertFalse(waiter.is_alive())
        finally:
            self.launcher.logger.removeHandler(watch)
        self.assertEqual(handle.poll(), 0)

    def test_a_call_that_does_not_answer_in_time_fails(self):
        go_on = os.path.join(self.dir, "never")
        answer = ok(status("RUNNING", False, 127))
        answer.update(hold=go_on)
        self.script(launch=[ok({"slurm_job_id": "4242"})], status=[answer])
        handle = self.launch()
        with self.assertRaisesRegex(B.FlareSlurmError, "no answer within 0.5 seconds; it was asked to stop"):
            handle.binary.call("status", ["--job-id", "job-1"], timeout=0.5)

    def test_one_follower_for_every_job(self):
        self.script(launch=[ok({"slurm_job_id": "4242"})],
                    follow={"job-1": [self.follow_line(status("COMPLETED", True, 0))],
                            "job-2": [self.follow_line(dict(status("CANCELLED", True, 9), job_id="job-2"))]})
        first = self.launch()
        second = self.launch({"job_id": "job-2", "name": "hello"})
        second.job_id = "job-2"  # the fake answered launch for job-1's request
        threads = [threading.Thread(target=h.wait) for h in (first, second)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        self.assertEqual((first.poll(), second.poll()), (0, 9))
        follows = [c for c in self.calls() if c["argv"][0] == "wait" and "line" not in c]
        self.assertEqual(sorted(c["stdin"] for c in follows), ["job-1", "job-2"])
        self.assertIs(first.follower, second.follower)

    def test_wait_tries_again_when_the_follower_ends(self):
        # The follower exits before the job ended (killed, crashed): the wait
        # fails, tries again after RETRY_INTERVAL and a new follower answers.
        B.RETRY_INTERVAL = 0.01
        self.script(launch=[ok({"slurm_job_id": "4242"})],
                    follow={"job-1": [{"exit": 1},
                                      {"line": {"status": "error", "data": {"job_id": "job-1"},
                                                "error": {"code": "wait_failed", "message": "job job-1: lock", "hint": "check"}}},
                                      self.follow_line(status("CANCELLED", True, 9))]})
        handle = self.launch()
        with self.assertLogs(self.launcher.logger, "ERROR") as logs:
            handle.wait()
        self.assertEqual(handle.poll(), 9)
        self.assertIn("flare-slurm wait --follow ended (exit 1) before the job did", logs.output[0])
        self.assertIn("flare-slurm wait: job job-1: lock (check)", logs.output[1])
        self.assertEqual(self.kinds(), ["launch-line", "wait", "wait", "wait"])

    def test_system_end_closes_the_followers_input(self):
        # At the parent's end the follower's input closes: it exits once the
        # jobs it was given have ended (the fake, at once).
        self.script(launch=[ok({"slurm_job_id": "4242"})], follow={"job-1": [self.follow_line(status("COMPLETED", True, 0))]})
        self.launch().wait()
        proc = self.launcher.follower._proc
        self.assertIsNotNone(proc)
        self.launcher.handle_event(EventType.SYSTEM_END, self.ctx)
        self.assertEqual(proc.wait(10), 0)

    def test_follower_that_cannot_start(self):
        B.RETRY_INTERVAL = 0.01
        launcher = B.ClientFlareSlurmJobLauncher(workspace_path=self.workspace, flare_slurm=self.dir + "/missing")
        with self.assertRaisesRegex(B.FlareSlurmError, "cannot run .*/missing"):
            launcher.follower.wait("job-1")
        self.assertEqual(launcher.follower._pending, {})

    def test_terminate(self):
        self.script(launch=[ok({"slurm_job_id": "4242"})],
                    cancel=[error("cancel_pending", "squeue did not answer"), ok(status("CANCELLED", True, 9))])
        handle = self.launch()
        handle.terminate()  # the abort stays recorded by the binary: no exception
        handle.terminate()
        self.assertEqual(handle.poll(), 9)
        handle.terminate()  # ended: nothing to cancel
        cancels = [c["argv"] for c in self.calls() if c["argv"][0] == "cancel"]
        self.assertEqual(cancels, [["cancel", "--workspace", self.workspace, "--job-id", "job-1", "--json"]] * 2)

    def test_heartbeat_cleanup_is_not_a_user_abort(self):
        # NVFlare calls _terminate_for_heartbeat_cleanup when the handle has
        # it; its own launcher then reports 104, not 9: the binary decides,
        # told by --cleanup.
        self.script(launch=[ok({"slurm_job_id": "4242"})], cancel=[ok(status("CANCELLED", True, 104))])
        handle = self.launch()
        handle._terminate_for_heartbeat_cleanup()
        self.assertEqual(handle.poll(), 104)
        cancels = [c["argv"] for c in self.calls() if c["argv"][0] == "cancel"]
        self.assertEqual(cancels, [["cancel", "--workspace", self.workspace, "--job-id", "job-1", "--cleanup", "--json"]])


if __name__ == "__main__":
    unittest.main()
