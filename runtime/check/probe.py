# flare-slurm check probe program. flare-slurm writes it, with probe.json,
# into a probe job's run dir; batch.sh runs it where the NVFlare worker
# would run, as "<python_path> -u probe.py <worker args>". It records what
# it observed in observed.json (written atomically, before any sleep, so
# that its presence means "the worker started") and exits with the code
# probe.json asks for. Standard library only; no value of a secret is ever
# written, only its SHA-256.
import hashlib
import json
import os
import socket
import sys
import time

if len(sys.argv) == 3 and sys.argv[1] == "--check-peer":
    # One task of the multi-node probe's srun: tell the first node who we are.
    host, port = sys.argv[2].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=15)
    s.sendall((socket.gethostname() + "\n").encode())
    s.close()
    sys.exit(0)

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "probe.json")) as f:
    spec = json.load(f)

seen = {
    "probe": spec.get("probe", ""),
    "host": socket.gethostname(),
    "uid": os.getuid(),
    "cwd": os.getcwd(),
    "python": sys.version.split()[0],
    "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""),
    "argv": sys.argv[1:],
    "env_names": sorted(os.environ),
    "env": {n: os.environ[n] for n in spec.get("report_env") or [] if n in os.environ},
    "secret_sha256": {},
}
for name in spec.get("secret_names") or []:
    v = os.environ.get(name)
    seen["secret_sha256"][name] = None if v is None else hashlib.sha256(v.encode()).hexdigest()
secret_file = spec.get("secret_file", "")
if secret_file:
    # Inside apptainer or pyxis the job dir is not mounted: then the worker
    # cannot tell whether secret.env is gone, and says so.
    seen["secret_dir_visible"] = os.path.isdir(os.path.dirname(secret_file))
    if seen["secret_dir_visible"]:
        seen["secret_file_present"] = os.path.lexists(secret_file)
try:
    seen["cpus"] = len(os.sched_getaffinity(0))
except (AttributeError, OSError):
    seen["cpus"] = os.cpu_count()

def cgroup_memory_limit(root="/sys/fs/cgroup", proc_cgroup="/proc/self/cgroup"):
    # cgroup v2: 0::/path -> memory.max; v1: N:memory:/path ->
    # memory.limit_in_bytes. Slurm limits the job's and the step's cgroups,
    # not the task's own (which shows max): the limit is the smallest one
    # from the process's cgroup up to the root.
    try:
        with open(proc_cgroup) as f:
            rows = [l.rstrip("\n").split(":", 2) for l in f]
    except OSError as e:
        return None, "no %s: %s" % (proc_cgroup, e)
    checked = []
    for row in rows:
        if len(row) != 3:
            continue
        _, ctrl, path = row
        if ctrl == "":
            base, name = root, "memory.max"
        elif "memory" in ctrl.split(","):
            base, name = root + "/memory", "memory.limit_in_bytes"
        else:
            continue
        best = None
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):
            fn = "/".join([base] + parts[:depth] + [name])
            try:
                with open(fn) as f:
                    v = f.read().strip()
            except OSError:
                continue
            checked.append(fn)
            if v.isdigit() and int(v) < 1 << 60 and (best is None or int(v) < best[0]):
                best = (int(v), fn)
        if best is not None:
            return best
    if checked:
        return None, "unlimited: " + ", ".join(checked)
    return None, "no memory controller limits this process"


if spec.get("resources"):
    seen["mem_limit_bytes"], seen["mem_limit_source"] = cgroup_memory_limit()
    seen["nvidia_smi"] = None
    for d in os.environ.get("PATH", "").split(os.pathsep):
        exe = os.path.join(d, "nvidia-smi")
        if d and os.access(exe, os.X_OK):
            import subprocess
            try:
                out = subprocess.run([exe, "-L"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20)
                seen["nvidia_smi"] = out.stdout.decode(errors="replace").strip().splitlines()
            except Exception as e:  # noqa: BLE001
                seen["nvidia_smi"] = ["error: %s" % e]
            break

seen["paths"] = {}
for p in spec.get("paths") or []:
    seen["paths"][p] = {
        "exists": os.path.exists(p),
        "dir": os.path.isdir(p),
        "writable": os.access(p, os.W_OK),
    }

if spec.get("peers"):
    # Multi-node: every node of the allocation (one srun task each)
    # connects to a listener on this, the first node.
    import subprocess
    n = int(spec["peers"])
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.bind(("", 0))
    ls.listen(64)
    ls.settimeout(5)
    me = socket.gethostname()
    port = ls.getsockname()[1]
    argv = [spec.get("srun") or "srun", "--nodes=%d" % n, "--ntasks=%d" % n, "--ntasks-per-node=1",
            sys.executable, "-u", os.path.abspath(__file__), "--check-peer", "%s:%d" % (me, port)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    reached, deadline = [], time.time() + 90
    while len(reached) < n and time.time() < deadline and (proc.poll() is None or len(reached) < n):
        try:
            c, addr = ls.accept()
        except socket.timeout:
            if proc.poll() is not None:
                break
            continue
        c.settimeout(10)
        try:
            reached.append({"host": c.recv(256).decode(errors="replace").strip(), "addr": addr[0]})
        except OSError as e:
            reached.append({"host": "", "addr": addr[0], "error": str(e)})
        c.close()
    try:
        out = proc.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        out = proc.communicate()[0]
    seen["peers"] = {"first": me, "port": port, "reached": reached, "srun_exit": proc.returncode,
                     "srun_output": out.decode(errors="replace")[-2000:]}

if spec.get("connect"):
    # The parent URL is the worker argument after -p, as NVFlare's worker
    # reads it: tcp://host:port or stcp://host:port.
    url, args = "", sys.argv[1:]
    for i, a in enumerate(args[:-1]):
        if a == "-p":
            url = args[i + 1]
    c = {"url": url, "ok": False}
    try:
        rest = url.split("://", 1)[1].split("/", 1)[0]
        host, port = rest.rsplit(":", 1)
        host = host.strip("[]")
        c["host"], c["port"] = host, int(port)
        start = time.time()
        s = socket.create_connection((host, int(port)), timeout=float(spec.get("connect_timeout", 10)))
        s.settimeout(float(spec.get("connect_timeout", 10)))
        nonce = spec.get("nonce", "")
        if nonce:
            s.sendall((nonce + "\n").encode())
            got = b""
            while not got.endswith(b"\n") and len(got) < 256:
                b = s.recv(256)
                if not b:
                    break
                got += b
            c["answer"] = got.decode(errors="replace").strip()
        s.close()
        c["seconds"] = round(time.time() - start, 3)
        c["ok"] = True
    except Exception as e:  # noqa: BLE001 - any failure is the observation
        c["error"] = "%s: %s" % (type(e).__name__, e)
    seen["connect"] = c

tmp = os.path.join(here, "observed.json.tmp")
with open(tmp, "w") as f:
    json.dump(seen, f, indent=1, sort_keys=True)
    f.write("\n")
os.rename(tmp, os.path.join(here, "observed.json"))

time.sleep(float(spec.get("sleep", 0)))
sys.exit(int(spec.get("exit", 0)))
