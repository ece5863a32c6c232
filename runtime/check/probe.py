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
    "env": {n: os.environ[n] for n in spec.get("report_env", []) if n in os.environ},
    "secret_sha256": {},
}
for name in spec.get("secret_names", []):
    v = os.environ.get(name)
    seen["secret_sha256"][name] = None if v is None else hashlib.sha256(v.encode()).hexdigest()
secret_file = spec.get("secret_file", "")
if secret_file:
    seen["secret_file_present"] = os.path.lexists(secret_file)
try:
    seen["cpus"] = len(os.sched_getaffinity(0))
except (AttributeError, OSError):
    seen["cpus"] = os.cpu_count()

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
