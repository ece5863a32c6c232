"""Compare the tracemalloc dumps of make bench-federation's parents.

    python3 compare.py DIR

For the server and the client, the growth of each allocation site from a
parent's first dump to its last, flare-slurm's parent against NVFlare's
(the largest differences first), each parent's traced memory over time,
and whether the launcher bridge (flare_slurm_bridge.py) is among the sites.
With several runs in DIR, each launcher's last parent of a role is used.
"""
import collections
import glob
import os
import re
import sys


def sites(path):
    out = {}
    section = False
    for line in open(path):
        if line.startswith("## by lineno"):
            section = True
        elif line.startswith("## by traceback"):
            break
        elif section:
            size, _, where = line.rstrip("\n").split(" ", 2)
            out[where] = int(size)
    return out


def main(d):
    dumps = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(d, "tm-*.txt"))):
        dumps[path.split("-")[-2]].append(path)
    parents = {}
    for pid, paths in sorted(dumps.items(), key=lambda kv: os.path.getmtime(kv[1][0])):
        ws = re.search(r"ws-[a-z-]+", open(paths[0]).readline()).group(0)
        parents[ws] = paths
        traced = [int(open(p).readlines()[2].split()[1]) / 2**20 for p in paths]
        print("%-24s pid %s: traced MiB %s" % (ws, pid, " ".join("%.1f" % t for t in traced)))
    bridge = sorted({l.strip() for ps in parents.values() for p in ps for l in open(p) if "flare_slurm_bridge" in l})
    print("launcher bridge among the sites: %s" % (bridge or "no"))
    for role in ("server", "site-"):
        nv = [w for w in parents if w.startswith("ws-nvflare") and role in w]
        fl = [w for w in parents if w.startswith("ws-flare-slurm") and role in w]
        if not nv or not fl:
            continue
        n, f = parents[nv[-1]], parents[fl[-1]]
        n0, n1, f0, f1 = sites(n[0]), sites(n[-1]), sites(f[0]), sites(f[-1])
        rows = []
        for k in set(n1) | set(f1):
            gn, gf = n1.get(k, 0) - n0.get(k, 0), f1.get(k, 0) - f0.get(k, 0)
            rows.append((gf - gn, gn, gf, k))
        rows.sort(key=lambda r: -abs(r[0]))
        print("\n%s: growth first → last dump, KiB (flare-slurm − NVFlare, NVFlare, flare-slurm)" % role.rstrip("-"))
        for diff, gn, gf, k in rows[:15]:
            print("%+9.0f %+9.0f %+9.0f  %s" % (diff / 1024, gn / 1024, gf / 1024, k))


if __name__ == "__main__":
    main(sys.argv[1])
