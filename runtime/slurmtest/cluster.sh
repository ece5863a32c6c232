#!/usr/bin/env bash
# cluster.sh: the project's own single-machine Slurm cluster for integration tests.
#
# A Debian 13 (trixie) root, built once with debootstrap and cached outside the
# repository, runs mariadbd, munged, slurmdbd, slurmctld and slurmd. The daemons
# run in a mount namespace of the cluster's own whose root is the cached root
# (pivot_root, not chroot: inside a chroot the kernel refuses the user
# namespaces that apptainer and enroot need), sharing the host's network
# namespace. Nothing in the host's /etc is touched.
# Three more slurmd (nodes flnode1..3, partition "multi") run in network
# namespaces of their own, on a private bridge the script creates and removes;
# they share the root as their "shared file system".
# The root also holds Python with NVFlare's dependencies, the real container
# runtimes (apptainer from Debian sid; enroot and the pyxis SPANK plugin built
# from the pinned sources), and `up` copies the NVFlare source tree to
# /opt/nvflare in it (read-only to the test account) and puts a worker image in
# both formats (flare-worker.sif, flare-worker.sqsh) in /opt/images.
# FLARE_SLURM_VERSION picks the Slurm version: 24.11 (trixie's, the default) or
# 26.05 (sid's packages in the same trixie root); each has a root of its own,
# and one cluster runs at a time.
#
#   cluster.sh up          build the root if needed, start what is not running, wait until healthy
#   cluster.sh down        cancel jobs, stop the daemons it started (by PID), unmount, forget state
#   cluster.sh status      print daemon and node state; exit 0 only when healthy
#   cluster.sh stop-ctld | start-ctld | stop-dbd | start-dbd    fault hooks for tests
#   cluster.sh env         print the facts tests need (KEY=value lines, NVFLARE_* included)
#   cluster.sh build       only build (or check) the cached root and images, start nothing
#   cluster.sh can-run     exit 0 when this machine can run the cluster (root, debootstrap or apt-get,
#                          its ports free or held by its own daemons)
#   cluster.sh ports-free  exit 0 unless another program holds a port the cluster needs
#   cluster.sh versions    print the Slurm versions FLARE_SLURM_VERSION accepts, one a line
#   cluster.sh purge       down, then delete the cached root (next up is a cold start)
#
# Environment (all optional):
#   FLARE_SLURM_VERSION Slurm version    (24.11, the default, or 26.05)
#   FLARE_SLURM_ROOT    cached root      (default /var/cache/flare-slurm/root-slurm-VERSION)
#   FLARE_SLURM_IMAGES  cached worker image root and images (default /var/cache/flare-slurm/images)
#   FLARE_SLURM_STATE   PIDs, logs, lock (default /run/flare-slurm)
#   FLARE_SLURM_MIRROR  Debian mirror    (default http://deb.debian.org/debian)
#   FLARE_SLURM_NVFLARE NVFlare source tree copied to /opt/nvflare in the root at `up`
#                       (default: <repo>/../shared/nvflare, then /work/shared/nvflare)
#   FLARE_SLURM_ENROOT, FLARE_SLURM_PYXIS
#                       the pinned enroot and pyxis sources built into the root
#                       (default: <repo>/../shared/NAME, then /work/shared/NAME)
#   FLARE_SLURM_NET     first three octets of the private node network (default 10.199.77)
set -euo pipefail
umask 022
export LC_ALL=C

# The Slurm versions of the matrix: the first is the default. Each version is
# a trixie root; a version other than trixie's takes its Slurm packages (and
# only what they need) from the suite named here, pinned like forky below.
SLURM_VERSIONS=(24.11 26.05)
declare -A SLURM_SUITE=([24.11]=trixie [26.05]=sid)
VERSION=${FLARE_SLURM_VERSION:-${SLURM_VERSIONS[0]}}
[ -n "${SLURM_SUITE[$VERSION]:-}" ] || {
	printf 'cluster.sh: error: FLARE_SLURM_VERSION=%s is not one of: %s\n' "$VERSION" "${SLURM_VERSIONS[*]}" >&2
	exit 2
}
CACHE=/var/cache/flare-slurm
ROOT=${FLARE_SLURM_ROOT:-$CACHE/root-slurm-$VERSION}
IMAGES=${FLARE_SLURM_IMAGES:-$CACHE/images}
STATE=${FLARE_SLURM_STATE:-/run/flare-slurm}
MIRROR=${FLARE_SLURM_MIRROR:-http://deb.debian.org/debian}
SUITE=trixie
LOGDIR=$STATE/log
# The cluster's mount namespace (a bind of its nsfs file), made at a cold start.
MNTNS=$STATE/mnt.ns
# Which version's cluster the daemons in STATE belong to.
RUNNING=$STATE/version

# Bump RECIPE whenever the build of the root changes: a cached root with another
# recipe is rebuilt on the next `up`.
RECIPE=3
PACKAGES=(slurmctld slurmd slurm-client slurmdbd mariadb-server munge procps
	# NVFlare's dependencies (the pinned source's README), for the federation tier.
	python3 python3-yaml python3-requests python3-numpy python3-msgpack python3-grpcio
	python3-protobuf python3-psutil python3-websockets python3-aiohttp python3-pydantic
	python3-docker
	# The container runtimes: apptainer's SIF mounts (squashfuse, fuse3), enroot's
	# run-time needs (doc/requirements.md), and what builds enroot and pyxis.
	squashfuse fuse3 squashfs-tools uidmap jq zstd pigz parallel
	gcc make libc6-dev libslurm-dev makeself)
# From sid for every version: apptainer is not in trixie (1.4.5 in sid; its
# dependencies are all in trixie).
SID_PACKAGES=(apptainer)
# A version whose suite is not trixie takes these from its suite.
SLURM_PACKAGES=(slurmctld slurmd slurm-client slurmdbd libslurm-dev slurm-wlm-basic-plugins
	slurm-wlm-mysql-plugin)
# NVFlare needs cryptography >= 45 (x509.verification.ExtensionPolicy); trixie
# ships 43. Forky's python3-cryptography (49) depends only on what trixie has and
# loads against trixie's OpenSSL 3.5: it alone is taken from forky (apt pin 1,
# source removed again after the install). The mirror's forky Release file may
# be past its Valid-Until (a frozen snapshot), hence check-valid-until=no.
FORKY_PACKAGES=(python3-cryptography)
MIN_CRYPTOGRAPHY=45

# NVFlare source: copied into the root at `up` (read-only, owned by root, byte
# code compiled), kept while its content hash is unchanged.
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NVFLARE_IN_ROOT=/opt/nvflare
NVFLARE_STAMP=/etc/flare-slurm-nvflare
PYXIS_PLUGIN=/usr/local/lib/slurm/spank_pyxis.so

CLUSTER=flare
ACCOUNT=flare
TEST_USER=flaretest
TEST_UID=1500
TEST_HOME=/home/$TEST_USER
TEST_WS=$TEST_HOME/ws
NODE_CPUS=4
NODE_MEM_MB=4096
NODE_GPUS=2
CTLD_PORT=6817
SLURMD_PORT=6818
DBD_PORT=6819
DB_PORT=3306
DB_PASS=flare-slurm-test-only
IN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The node network: a bridge with no uplink on the host (its address is the
# "login side": slurmctld, slurmdbd, NVFlare parents), one network namespace per
# node with a veth on the bridge and no default route, so nothing leaves the
# machine. The host's own node keeps 127.0.0.1 and the default partition.
NET=${FLARE_SLURM_NET:-10.199.77}
BRIDGE=flslurm0
LOGIN_ADDR=$NET.1
LOGIN_HOST=flare-login
MULTI_PARTITION=multi
NODES=(flnode1 flnode2 flnode3)
declare -A NODE_ADDR=([flnode1]=$NET.11 [flnode2]=$NET.12 [flnode3]=$NET.13)
netns_of() { echo "flare-slurm-$1"; }
veth_of() { echo "flslurm-${1#flnode}"; }

# Daemons in start order: name, binary inside the root. slurmd-NODE runs the
# slurmd of NODE in that node's network namespace.
DAEMONS=(mariadbd munged slurmdbd slurmctld slurmd)
declare -A BIN=(
	[mariadbd]=/usr/sbin/mariadbd
	[munged]=/usr/sbin/munged
	[slurmdbd]=/usr/sbin/slurmdbd
	[slurmctld]=/usr/sbin/slurmctld
	[slurmd]=/usr/sbin/slurmd
)
for n in "${NODES[@]}"; do
	DAEMONS+=("slurmd-$n")
	BIN[slurmd-$n]=/usr/sbin/slurmd
done
unset n

say() { printf 'cluster.sh: %s\n' "$*" >&2; }
die() {
	printf 'cluster.sh: error: %s\n' "$*" >&2
	exit 1
}

# ---------------------------------------------------------------- preconditions

can_run() {
	[ "$(id -u)" = 0 ] || {
		echo "must run as root (it uses chroot and mount); run it with sudo or as root"
		return 1
	}
	[ "$(uname -s)" = Linux ] || {
		echo "needs Linux"
		return 1
	}
	local t
	for t in chroot mount umount flock setsid mountpoint nsenter unshare; do
		command -v "$t" >/dev/null || {
			echo "needs '$t' on the host"
			return 1
		}
	done
	if [ ! -r "$ROOT/etc/flare-slurm-build" ] && ! command -v debootstrap >/dev/null &&
		! command -v apt-get >/dev/null; then
		echo "no cached root at $ROOT, no debootstrap and no apt-get to install it: cannot build the Debian trixie root"
		return 1
	fi
	if ! command -v ip >/dev/null && ! command -v apt-get >/dev/null; then
		echo "needs 'ip' (iproute2) on the host for the node network, and there is no apt-get to install it"
		return 1
	fi
	private_net "$NET" || {
		echo "FLARE_SLURM_NET=$NET is not the first three octets of a private (RFC 1918) IPv4 network, e.g. 10.199.77"
		return 1
	}
	# Building a root needs no port: another cluster may run meanwhile.
	[ "${1:-}" = build ] && return 0
	local taken
	if taken=$(ports_taken); then
		echo "$taken"
		return 1
	fi
}

# ports_taken: when a port the cluster listens on is in use by a program that
# is not the cluster's own daemon (a real Slurm or MariaDB/MySQL of this host),
# print why and succeed; else fail. FLARE_SLURM_CHECK_PORTS ("port:daemon ...")
# replaces the list for tests.
ports_taken() {
	local spec port daemon busy=() other
	if other=$(other_running); then
		echo "the Slurm ${other%% *} test cluster holds the ports; stop it first: $0 down"
		return 0
	fi
	for spec in ${FLARE_SLURM_CHECK_PORTS:-$CTLD_PORT:slurmctld $SLURMD_PORT:slurmd $DBD_PORT:slurmdbd $DB_PORT:mariadbd}; do
		port=${spec%%:*} daemon=${spec#*:}
		port_busy "$port" || continue
		alive "$daemon" && continue
		busy+=("$port")
	done
	[ ${#busy[@]} -gt 0 ] || return 1
	echo "127.0.0.1 port(s) ${busy[*]} in use by another program (a Slurm or MariaDB/MySQL of this host?); the test cluster needs ports $CTLD_PORT-$DBD_PORT and $DB_PORT"
}

# private_net A.B.C: three octets (0..255) of an RFC 1918 network.
private_net() {
	local o='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
	[[ $1 =~ ^(10\.$o|172\.(1[6-9]|2[0-9]|3[01])|192\.168)\.$o$ ]]
}

require_can_run() {
	local why
	why=$(can_run "$@") || die "cannot run the Slurm test cluster here: $why"
}

lock() {
	mkdir -p "$STATE" "$LOGDIR"
	chmod 0755 "$STATE"
	exec 9>"$STATE/lock"
	flock -w 900 9 || die "timed out waiting for $STATE/lock (another cluster.sh is running)"
}

# --------------------------------------------------------------------- helpers

# inroot CMD...: run CMD as root inside the root with a minimal environment.
inroot() {
	chroot "$ROOT" /usr/bin/env -i PATH="$IN_PATH" LC_ALL=C HOME=/root "$@"
}

host_short() { local h; h=$(uname -n); echo "${h%%.*}"; }

# ids NAME: "uid gid" of NAME in the root's /etc/passwd.
ids() {
	awk -F: -v u="$1" '$1 == u { print $3, $4; found = 1 } END { exit !found }' "$ROOT/etc/passwd" ||
		die "user $1 missing in $ROOT/etc/passwd"
}

# wait_for SECONDS DESCRIPTION CMD...: retry CMD every 0.5 s until it succeeds.
wait_for() {
	local secs=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			say "timed out after ${secs}s waiting for $what"
			return 1
		fi
		sleep 0.5
	done
}

# canon_root: the root with symlinks resolved; where it (or the cache above
# it) does not exist yet, as it will be made (env runs before the first up).
canon_root() { readlink -m "$ROOT"; }

# pid_of NAME: the recorded PID of daemon NAME if that process is alive and is
# still our daemon: it runs in the cluster's mount namespace, and its
# executable (a path inside that namespace) is the root's binary.
pid_of() {
	local name=$1 pid exe ns id
	[ -r "$STATE/$name.pid" ] || return 1
	read -r pid <"$STATE/$name.pid" || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	id=$(mntns_id) || return 1
	ns=$(readlink "/proc/$pid/ns/mnt" 2>/dev/null) || return 1
	[ "$ns" = "mnt:[$id]" ] || return 1
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
	[ "$exe" = "$(real_bin "$name")" ] || return 1
	echo "$pid"
}

# real_bin NAME: the daemon's binary with the root's symlinks resolved (Debian
# installs e.g. /usr/sbin/slurmctld as an alternative for slurmctld-wlm).
declare -A REAL_BIN=()
real_bin() {
	if [ -z "${REAL_BIN[$1]:-}" ]; then
		REAL_BIN[$1]=$(chroot "$ROOT" /usr/bin/readlink -f "${BIN[$1]}")
	fi
	echo "${REAL_BIN[$1]}"
}

alive() { pid_of "$1" >/dev/null; }

# stop_pid PID LABEL: SIGTERM, wait up to 30 s, then SIGKILL.
stop_pid() {
	local pid=$1 label=$2 i
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 300; i++)); do
		[ -e "/proc/$pid" ] || return 0
		# a zombie (exited, not yet reaped) has no exe link
		readlink "/proc/$pid/exe" >/dev/null 2>&1 || return 0
		sleep 0.1
	done
	say "$label (pid $pid) ignored SIGTERM for 30s, sending SIGKILL"
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		readlink "/proc/$pid/exe" >/dev/null 2>&1 || return 0
		sleep 0.1
	done
}

stop_daemon() {
	local name=$1 pid
	if pid=$(pid_of "$name"); then
		stop_pid "$pid" "$name"
	fi
	rm -f "$STATE/$name.pid"
}

# launch NAME USERSPEC ARGS...: start a daemon in the foreground mode of its own,
# detached (own session, stdio to a log, no inherited lock fd), in the
# cluster's mount namespace, record its PID. USERSPEC is UID:GID or empty
# (root). With NODE set, the daemon runs in that node's network namespace and
# in a UTS namespace of its own whose host name is NODE (setsid, nsenter,
# unshare, env and sh all exec in place: the PID is the daemon's).
launch() {
	local name=$1 userspec=$2 pid i
	shift 2
	local ids=() ns=(--mount="$MNTNS") uts=() cmd=("${BIN[$name]}" "$@")
	[ -n "$userspec" ] && ids=(--setuid="${userspec%%:*}" --setgid="${userspec#*:}")
	if [ -n "${NODE:-}" ]; then
		ns+=(--net="/run/netns/$(netns_of "$NODE")")
		uts=(unshare --uts)
		cmd=(/bin/sh -c 'hostname "$0" && exec "$@"' "$NODE" "${cmd[@]}")
	fi
	(
		cd /
		exec setsid nsenter "${ns[@]}" "${ids[@]}" -- "${uts[@]}" /usr/bin/env -i PATH="$IN_PATH" LC_ALL=C HOME=/ \
			"${cmd[@]}"
	) </dev/null >>"$LOGDIR/$name.log" 2>&1 9>&- &
	pid=$!
	echo "$pid" >"$STATE/$name.pid"
	# setsid, nsenter and env exec in place: wait until the PID is the daemon itself.
	for ((i = 0; i < 100; i++)); do
		alive "$name" && return 0
		[ -e "/proc/$pid" ] || break
		sleep 0.05
	done
	say "$name did not start; last lines of $LOGDIR/$name.log:"
	tail -n 20 "$LOGDIR/$name.log" >&2 || true
	return 1
}

# processes_in_root: PIDs of every process of the cluster: in its mount
# namespace (daemons, job steps) or chrooted into the root (commands).
processes_in_root() {
	local r p id
	r=$(canon_root)
	id=$(mntns_id) || id=none
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = "$$" ] && continue
		if [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "mnt:[$id]" ] ||
			[ "$(readlink "$p/root" 2>/dev/null)" = "$r" ]; then
			echo "${p#/proc/}"
		fi
	done
	return 0
}

# sweep: stop leftovers of earlier runs inside the root (job steps, a daemon whose
# PID file was lost). Only processes chrooted into our root are touched.
sweep() {
	local pids p
	pids=$(processes_in_root)
	[ -z "$pids" ] && return 0
	say "stopping leftover processes inside the root: $(for p in $pids; do printf '%s(%s) ' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)"; done)"
	for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
	for ((i = 0; i < 100; i++)); do
		[ -z "$(processes_in_root)" ] && return 0
		sleep 0.1
	done
	for p in $(processes_in_root); do kill -KILL "$p" 2>/dev/null || true; done
	sleep 0.5
}

# mounts_under DIR: mount points at or below DIR, deepest first.
mounts_under() {
	local d
	d=$(readlink -f "$1")
	awk -v d="$d" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

umount_under() {
	local m
	for m in $(mounts_under "$1"); do
		umount "$m" 2>/dev/null || umount -l "$m" || die "cannot unmount $m"
	done
}

mount_root() {
	local r=$1
	mountpoint -q "$r/proc" || mount -t proc -o nosuid,nodev,noexec proc "$r/proc" ||
		die "cannot mount proc in $r (is this a container without mount rights?)"
	mountpoint -q "$r/sys" || mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$r/sys" ||
		die "cannot mount sysfs in $r"
}

# mount_devices: what a compute node's /dev has and the container runtimes
# use: a devpts instance of the root's own (apptainer refuses a /dev/pts that
# is not one), its ptmx, and a POSIX message queue mount (enroot binds
# /dev/mqueue into every container).
mount_devices() {
	local r=$1
	mkdir -p "$r/dev/pts" "$r/dev/mqueue"
	mountpoint -q "$r/dev/pts" || mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,nosuid,noexec devpts "$r/dev/pts" ||
		die "cannot mount a devpts instance in $r"
	mountpoint -q "$r/dev/ptmx" || mount --bind "$r/dev/pts/ptmx" "$r/dev/ptmx" || die "cannot bind $r/dev/ptmx"
	mountpoint -q "$r/dev/mqueue" || mount -t mqueue -o nosuid,nodev,noexec mqueue "$r/dev/mqueue" ||
		die "cannot mount mqueue in $r"
}

# ------------------------------------------------------------ mount namespace

# The daemons (and so every job step) run in the cluster's mount namespace,
# whose root is ROOT through pivot_root: the kernel refuses unprivileged user
# namespaces to a chrooted process (unshare(2), EPERM "in a chroot
# environment"), and apptainer --userns and enroot need them. The namespace
# is made at a cold start after every mount under ROOT (its propagation is
# private: later host mounts do not reach it), kept by a bind of its nsfs
# file on MNTNS, and entered with nsenter, which sets a process's root to the
# namespace's. Short commands (inroot, the tests' Command) still chroot: they
# need no namespace.

mntns_ok() { mountpoint -q "$MNTNS" 2>/dev/null; }

# running_stamp: what RUNNING holds while this version's cluster runs.
running_stamp() { echo "$VERSION $(canon_root)"; }

# other_running: the stamp of another version's (or root's) cluster whose
# namespace is still there, or fail.
other_running() {
	local r
	mntns_ok || return 1
	r=$(cat "$RUNNING" 2>/dev/null) || return 1
	[ -n "$r" ] && [ "$r" != "$(running_stamp)" ] || return 1
	echo "$r"
}

# mntns_id: the inode of this cluster's mount namespace (none while another
# version's cluster holds MNTNS).
mntns_id() {
	[ "$(cat "$RUNNING" 2>/dev/null)" = "$(running_stamp)" ] || return 1
	stat -L -c %i "$MNTNS" 2>/dev/null
}

mntns_up() {
	mntns_ok && return 0
	: >"$MNTNS"
	unshare --mount="$MNTNS" --propagation private /bin/sh -ec '
		mount --rbind "$1" "$1"
		cd "$1"
		mkdir -p .flare-slurm-oldroot
		pivot_root . .flare-slurm-oldroot
		cd /
		umount -l /.flare-slurm-oldroot
		rmdir /.flare-slurm-oldroot' sh "$(canon_root)" ||
		die "cannot make the cluster's mount namespace (unshare --mount and pivot_root into $ROOT)"
}

# mntns_down: forget the namespace; it ends with its last process.
mntns_down() {
	if mntns_ok; then
		umount "$MNTNS" 2>/dev/null || umount -l "$MNTNS" || say "cannot unmount $MNTNS"
	fi
	rm -f "$MNTNS"
}

# ---------------------------------------------------------------- node network

# net_conflict: a reason when an address or route of the host (other than our
# bridge) already covers the node network.
net_conflict() {
	local line
	line=$(ip -4 -o addr show | awk -v b="$BRIDGE" -v n="$NET." '$2 != b && index($4, n) == 1 { print $2 " " $4; exit }')
	[ -n "$line" ] && {
		echo "the host already has $line"
		return 0
	}
	# Routes covering the network (but the default route) or inside it.
	line=$({ ip -4 route show match "$NET.0/24" && ip -4 route show root "$NET.0/24"; } |
		grep -v -e '^default ' -e " dev $BRIDGE " | head -n 1 || true)
	[ -n "$line" ] && {
		echo "the host already routes $NET.0/24 ($line)"
		return 0
	}
	return 1
}

net_ok() {
	ip -4 -o addr show dev "$BRIDGE" 2>/dev/null | grep -q " $LOGIN_ADDR/24 " || return 1
	local n
	for n in "${NODES[@]}"; do
		ip -n "$(netns_of "$n")" -4 -o addr show dev eth0 2>/dev/null | grep -q " ${NODE_ADDR[$n]}/24 " || return 1
	done
}

# net_try CMD...: one step of net_up; a failure ends the script with the reason.
net_try() {
	local err
	err=$("$@" 2>&1) ||
		die "cannot create the node network ($*: ${err:-failed}): the three-node cluster needs network namespaces, veth and bridge devices (root with CAP_SYS_ADMIN and CAP_NET_ADMIN; a container without them cannot run it)"
}

# net_up: the bridge (address LOGIN_ADDR) and one namespace per node, its veth
# on the bridge, address NODE_ADDR; no default route anywhere. Refuses clearly
# when the host does not allow it (e.g. a container without CAP_NET_ADMIN).
# Anything left of an earlier network is removed first.
net_up() {
	ensure_host_tool ip iproute2
	net_down
	local why n ns veth
	if why=$(net_conflict); then
		die "cannot create the node network $NET.0/24: $why; choose another private /24 with FLARE_SLURM_NET (its first three octets; default 10.199.77)"
	fi
	net_try ip link add "$BRIDGE" type bridge
	net_try ip addr add "$LOGIN_ADDR/24" dev "$BRIDGE"
	net_try ip link set "$BRIDGE" up
	for n in "${NODES[@]}"; do
		ns=$(netns_of "$n")
		veth=$(veth_of "$n")
		net_try ip netns add "$ns"
		net_try ip link add "$veth" type veth peer name eth0 netns "$ns"
		net_try ip link set "$veth" master "$BRIDGE" up
		net_try ip -n "$ns" addr add "${NODE_ADDR[$n]}/24" dev eth0
		net_try ip -n "$ns" link set eth0 up
		net_try ip -n "$ns" link set lo up
	done
}

# net_down: remove what net_up creates, whatever is left of it (idempotent).
# Run it only when no process is left in the namespaces (sweep first).
net_down() {
	command -v ip >/dev/null || return 0
	local n ns veth
	for n in "${NODES[@]}"; do
		ns=$(netns_of "$n")
		veth=$(veth_of "$n")
		# The veth first: deleting it deletes its peer in the namespace at once,
		# while a deleted namespace takes its devices down asynchronously.
		if ip link show "$veth" >/dev/null 2>&1; then
			ip link delete "$veth" 2>/dev/null || say "cannot delete $veth"
		fi
		if [ -e "/run/netns/$ns" ]; then
			ip netns delete "$ns" 2>/dev/null || say "cannot delete network namespace $ns"
		fi
	done
	if ip link show "$BRIDGE" >/dev/null 2>&1; then
		ip link delete "$BRIDGE" 2>/dev/null || say "cannot delete the bridge $BRIDGE"
	fi
	return 0
}

# ------------------------------------------------------------------------ build

recipe_stamp() {
	echo "recipe=$RECIPE suite=$SUITE slurm=$VERSION packages=${PACKAGES[*]} forky=${FORKY_PACKAGES[*]} sid=${SID_PACKAGES[*]} $(runtime_sources_stamp)"
}

root_is_current() {
	[ -r "$ROOT/etc/flare-slurm-build" ] &&
		[ "$(cat "$ROOT/etc/flare-slurm-build")" = "$(recipe_stamp)" ]
}

# ensure_host_tool COMMAND PACKAGE: install PACKAGE on the host with apt-get
# when COMMAND is missing (debootstrap for the build, iproute2 for the network).
ensure_host_tool() {
	command -v "$1" >/dev/null && return 0
	command -v apt-get >/dev/null || die "$1 is missing on the host and there is no apt-get to install $2"
	say "installing $2 on the host (apt-get)"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$LOGDIR/host-apt.log" 2>&1 ||
		die "apt-get update failed; see $LOGDIR/host-apt.log"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >>"$LOGDIR/host-apt.log" 2>&1 ||
		die "apt-get install $2 failed; see $LOGDIR/host-apt.log"
	command -v "$1" >/dev/null || die "$2 is installed but $1 is still missing"
}

# Debian packages debootstrap fetched, shared by every root it builds.
DEB_CACHE=$CACHE/debs

BUILD_TMP=
cleanup_build() {
	if [ -n "$BUILD_TMP" ] && [ -d "$BUILD_TMP" ]; then
		umount_under "$BUILD_TMP" || true
		rm -rf --one-file-system "$BUILD_TMP"
	fi
}

build_failed() {
	say "building the root failed; last lines of $LOGDIR/build.log:"
	tail -n 30 "$LOGDIR/build.log" >&2 || true
	exit 1
}

# install_pinned DIR SUITE PACKAGE...: PACKAGEs from Debian SUITE into the root
# DIR, their dependencies from trixie where it has them (SUITE pinned to 1 so
# nothing else can come from it), then SUITE is removed from the root's sources
# again. The mirror's Release files of forky and sid may be past their
# Valid-Until (frozen snapshots), hence check-valid-until=no.
install_pinned() {
	local dir=$1 suite=$2
	shift 2
	local list=/etc/apt/sources.list.d/flare-slurm-$suite.list pin=/etc/apt/preferences.d/flare-slurm-$suite
	echo "deb [check-valid-until=no] $MIRROR $suite main" >"$dir$list"
	printf 'Package: *\nPin: release n=%s\nPin-Priority: 1\n' "$suite" >"$dir$pin"
	local specs=() p rc=0
	for p in "$@"; do specs+=("$p/$suite"); done
	chroot "$dir" /usr/bin/env -i PATH="$IN_PATH" LC_ALL=C HOME=/root DEBIAN_FRONTEND=noninteractive \
		sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"' sh "${specs[@]}" || rc=$?
	rm -f "$dir$list" "$dir$pin"
	chroot "$dir" /usr/bin/env -i PATH="$IN_PATH" LC_ALL=C HOME=/root sh -c 'apt-get update -qq && apt-get clean' || rc=1
	return "$rc"
}

# check_cryptography DIR: the root's cryptography is new enough for NVFlare.
check_cryptography() {
	chroot "$1" /usr/bin/env -i PATH="$IN_PATH" LC_ALL=C /usr/bin/python3 -c '
import sys
import cryptography
from cryptography.x509.verification import ExtensionPolicy
major = int(cryptography.__version__.split(".")[0])
print("cryptography", cryptography.__version__)
sys.exit(0 if major >= int(sys.argv[1]) else 1)
' "$MIN_CRYPTOGRAPHY"
}

# install_python_packages DIR: NVFlare's dependencies (trixie's, forky's
# cryptography) into the root DIR, with proc mounted.
install_python_packages() {
	local dir=$1
	shift
	chroot "$dir" /usr/bin/env -i PATH="$IN_PATH" LC_ALL=C HOME=/root DEBIAN_FRONTEND=noninteractive \
		sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" && apt-get clean' \
		sh "$@" || return 1
	install_pinned "$dir" forky "${FORKY_PACKAGES[@]}" && check_cryptography "$dir"
}

# ------------------------------------------------------- container runtimes

# The pinned sources of enroot and pyxis (../shared/CONTAINERS.md), found like
# the NVFlare source: FLARE_SLURM_ENROOT / FLARE_SLURM_PYXIS when set, else the
# checkout's ../shared/NAME, else /work/shared/NAME.
runtime_source() { # runtime_source NAME MARKER: the source directory, or fail
	local name=$1 marker=$2 var d
	var=FLARE_SLURM_${name^^}
	if [ -n "${!var:-}" ]; then
		set -- "${!var}"
	else
		set -- "$SCRIPT_DIR/../../../shared/$name" "/work/shared/$name"
	fi
	for d in "$@"; do
		if [ -f "$d/$marker" ]; then
			(cd "$d" && pwd -P)
			return 0
		fi
	done
	return 1
}
enroot_source() { runtime_source enroot enroot.in; }
pyxis_source() { runtime_source pyxis pyxis_slurmstepd.c; }

# tree_hash DIR: hash of the tree's names, modes and contents (not times,
# owners or byte code), so an identical copy elsewhere hashes the same.
tree_hash() {
	tar -C "$1" --sort=name --exclude=__pycache__ --exclude='*.pyc' --exclude=.git --mtime=@0 \
		--owner=0 --group=0 --numeric-owner -cf - . | sha256sum | cut -d' ' -f1
}

# runtime_sources_stamp: the part of the recipe that names the pinned runtime
# sources (a changed pin rebuilds the root).
runtime_sources_stamp() {
	local e p
	e=$(enroot_source) && e=$(tree_hash "$e") || e=missing
	p=$(pyxis_source) && p=$(tree_hash "$p") || p=missing
	echo "enroot=$e pyxis=$p"
}

runtime_missing_reason() {
	echo "no enroot or pyxis source (FLARE_SLURM_ENROOT, FLARE_SLURM_PYXIS, or ../shared/enroot and ../shared/pyxis beside the checkout, or /work/shared): the pyxis sandbox cannot run; see ../shared/CONTAINERS.md"
}

# build_runtimes DIR: enroot (glibc build; makeself from Debian's package; the
# kernel headers from linux-libc-dev, so its empty deps/ submodules are not
# needed) and the pyxis SPANK plugin (against DIR's libslurm-dev, i.e. this
# root's Slurm), installed under /usr/local with enroot's configuration in
# /etc/enroot. Without the sources the root is built without them.
build_runtimes() {
	local dir=$1 e p src=/usr/local/src
	if ! e=$(enroot_source) || ! p=$(pyxis_source); then
		say "$(runtime_missing_reason)"
		return 0
	fi
	rm -rf "$dir$src/enroot" "$dir$src/pyxis"
	mkdir -p "$dir$src"
	cp -a "$e" "$dir$src/enroot"
	cp -a "$p" "$dir$src/pyxis"
	mkdir -p "$dir$src/enroot/deps/makeself" "$dir$src/enroot/deps/linux-headers" "$dir$src/enroot/deps/dist/linux/include"
	cp "$dir/usr/bin/makeself" "$dir$src/enroot/deps/makeself/makeself.sh"
	touch "$dir$src/enroot/deps/linux-headers/.stamp"
	chroot "$dir" /usr/bin/env -i PATH="$IN_PATH" LC_ALL=C HOME=/root sh -ec '
		make -C /usr/local/src/enroot -s FORCE_GLIBC=1 prefix=/usr/local sysconfdir=/etc install
		make -C /usr/local/src/pyxis -s prefix=/usr/local install
		/usr/local/bin/enroot version
		test -f /usr/local/lib/slurm/spank_pyxis.so'
}

# -------------------------------------------------------------- worker image

# The worker image: a Debian trixie root with NVFlare's dependencies and the
# NVFlare source at /opt/nvflare (as in the cluster root), in both formats a
# site uses: a squashfs file (enroot imports it directly; pyxis's
# --container-image=PATH) and a SIF holding that squashfs (apptainer). It is
# built from a root of its own (debootstrap, no Slurm), cached in IMAGES and
# shared by every version's root (a hard link in /opt/images).
IMAGE_RECIPE=1
# (the images themselves are keyed by image_stamp; bump IMAGE_FILES when
# build_images changes what goes into them)
IMAGE_FILES=3
IMAGE_ROOT=$IMAGES/worker-root
IMAGE_DIR=/opt/images
IMAGE_NAME=flare-worker
IMAGE_PACKAGES=(python3 python3-yaml python3-requests python3-numpy python3-msgpack python3-grpcio
	python3-protobuf python3-psutil python3-websockets python3-aiohttp python3-pydantic
	python3-docker)

image_root_stamp() { echo "image-recipe=$IMAGE_RECIPE suite=$SUITE packages=${IMAGE_PACKAGES[*]} forky=${FORKY_PACKAGES[*]}"; }

# build_image_root: the worker image's root in IMAGE_ROOT (minbase, NVFlare's
# packages, no Slurm, no compilers), unless current.
build_image_root() {
	[ "$(cat "$IMAGE_ROOT/etc/flare-slurm-image" 2>/dev/null)" = "$(image_root_stamp)" ] && return 0
	local tmp t0=$SECONDS old
	mkdir -p "$IMAGES"
	for old in "$IMAGE_ROOT".build.*; do
		[ -e "$old" ] || continue
		umount_under "$old"
		rm -rf --one-file-system "$old"
	done
	tmp=$(mktemp -d "$IMAGE_ROOT.build.XXXXXX")
	BUILD_TMP=$tmp
	trap cleanup_build EXIT
	chmod 0755 "$tmp"
	say "building the worker image's root in $tmp (debootstrap and NVFlare's packages, about 90 s)"
	debootstrap --variant=minbase --cache-dir="$DEB_CACHE" "$SUITE" "$tmp" "$MIRROR" >>"$LOGDIR/build.log" 2>&1 || build_failed
	mount_root "$tmp"
	install_python_packages "$tmp" "${IMAGE_PACKAGES[@]}" >>"$LOGDIR/build.log" 2>&1 || build_failed
	umount_under "$tmp"
	# What a container does not need, and would only make every pyxis job's
	# import slower: package lists, documentation.
	rm -rf "$tmp/var/lib/apt/lists/"* "$tmp/usr/share/doc" "$tmp/usr/share/man" "$tmp/usr/share/info"
	image_root_stamp >"$tmp/etc/flare-slurm-image"
	rm -rf --one-file-system "$IMAGE_ROOT"
	mv "$tmp" "$IMAGE_ROOT"
	BUILD_TMP=
	trap - EXIT
	say "worker image root built in $((SECONDS - t0))s"
}

# image_stamp: what the images are made of: the image root and the NVFlare
# source in it.
image_stamp() {
	local nv
	nv=$(nvflare_source) && nv=$(nvflare_hash "$nv") || nv=missing
	echo "$(image_root_stamp) files=$IMAGE_FILES nvflare=$nv"
}

# build_images: IMAGES/flare-worker.{sqsh,sif} from the image root plus the
# NVFlare source (byte code compiled), made with this root's squashfs-tools and
# apptainer (no privileges: `apptainer sif` assembles the SIF around the same
# squashfs, as `apptainer build` would, without unpacking it again); then hard
# links in this root's /opt/images. Kept while image_stamp is unchanged.
# The image's /dev is empty, as in every container image: the container
# runtime provides /dev, and enroot unpacks an image as the job's user, who
# cannot create device nodes (pyxis then fails the step).
build_images() {
	local want sqsh=$IMAGES/$IMAGE_NAME.sqsh sif=$IMAGES/$IMAGE_NAME.sif t0=$SECONDS src
	want=$(image_stamp)
	if [ "$(cat "$IMAGES/stamp" 2>/dev/null)" != "$want" ] || [ ! -s "$sqsh" ] || [ ! -s "$sif" ]; then
		build_image_root
		rm -f "$IMAGES/stamp"
		rm -rf --one-file-system "$IMAGE_ROOT$NVFLARE_IN_ROOT"
		if src=$(nvflare_source); then
			mkdir -p "$IMAGE_ROOT$NVFLARE_IN_ROOT"
			tar -C "$src" --exclude=__pycache__ --exclude='*.pyc' -cf - . |
				tar -C "$IMAGE_ROOT$NVFLARE_IN_ROOT" --no-same-owner --no-same-permissions -xf -
			chown -R 0:0 "$IMAGE_ROOT$NVFLARE_IN_ROOT"
			chmod -R u+rwX,go+rX,go-w "$IMAGE_ROOT$NVFLARE_IN_ROOT"
			chroot "$IMAGE_ROOT" /usr/bin/env -i PATH="$IN_PATH" LC_ALL=C /usr/bin/python3 -m compileall -q \
				"$NVFLARE_IN_ROOT" >>"$LOGDIR/build.log" 2>&1 || die "compiling NVFlare's byte code in the image failed; see $LOGDIR/build.log"
		fi
		# NVFlare is installed in the image as pip would (importable without
		# PYTHONPATH, which the job sets to its own value): a .pth file.
		echo "$NVFLARE_IN_ROOT" >"$IMAGE_ROOT/usr/lib/python3/dist-packages/flare-slurm-nvflare.pth"
		say "making the worker images (squashfs and SIF, about 30 s)"
		local work=$ROOT/var/tmp/flare-image-src
		mkdir -p "$work" "$ROOT$IMAGE_DIR"
		mount --bind "$IMAGE_ROOT" "$work"
		local rc=0
		inroot sh -ec '
			rm -f "$2.new" "$3.new"
			mksquashfs "$1" "$2.new" -noappend -quiet -no-progress -comp gzip -wildcards -e "dev/*" >/dev/null
			apptainer sif new "$3.new"
			apptainer sif add --datatype 4 --partfs 1 --parttype 2 --partarch 2 --groupid 1 "$3.new" "$2.new"' \
			sh /var/tmp/flare-image-src "$IMAGE_DIR/.build-$IMAGE_NAME.sqsh" "$IMAGE_DIR/.build-$IMAGE_NAME.sif" \
			>>"$LOGDIR/build.log" 2>&1 || rc=$?
		umount "$work"
		rmdir "$work"
		[ "$rc" = 0 ] || die "making the worker images failed; see $LOGDIR/build.log"
		chmod 0644 "$ROOT$IMAGE_DIR/.build-$IMAGE_NAME.sqsh.new" "$ROOT$IMAGE_DIR/.build-$IMAGE_NAME.sif.new"
		mv -f "$ROOT$IMAGE_DIR/.build-$IMAGE_NAME.sqsh.new" "$sqsh"
		mv -f "$ROOT$IMAGE_DIR/.build-$IMAGE_NAME.sif.new" "$sif"
		echo "$want" >"$IMAGES/stamp"
		say "worker images made in $((SECONDS - t0))s: $sqsh, $sif"
	fi
	mkdir -p "$ROOT$IMAGE_DIR"
	local f
	for f in "$sqsh" "$sif"; do
		if [ "$(stat -c %d:%i "$f")" != "$(stat -c %d:%i "$ROOT$IMAGE_DIR/${f##*/}" 2>/dev/null)" ]; then
			ln -f "$f" "$ROOT$IMAGE_DIR/${f##*/}" 2>/dev/null || cp -f "$f" "$ROOT$IMAGE_DIR/${f##*/}"
		fi
	done
	echo "$want" >"$ROOT$IMAGE_DIR/stamp"
}

build_root() {
	local parent old t0=$SECONDS
	parent=$(dirname "$ROOT")
	mkdir -p "$parent"
	# Leftovers of interrupted builds are never mistaken for a root: remove them.
	for old in "$ROOT".build.* "$ROOT".old.*; do
		[ -e "$old" ] || continue
		umount_under "$old"
		rm -rf --one-file-system "$old"
	done
	ensure_host_tool debootstrap debootstrap
	: >"$LOGDIR/build.log"
	BUILD_TMP=$(mktemp -d "$ROOT.build.XXXXXX")
	trap cleanup_build EXIT
	chmod 0755 "$BUILD_TMP"
	say "building the Debian $SUITE root for Slurm $VERSION in $BUILD_TMP (debootstrap, about 30 s)"
	mkdir -p "$DEB_CACHE"
	debootstrap --variant=minbase --cache-dir="$DEB_CACHE" "$SUITE" "$BUILD_TMP" "$MIRROR" >>"$LOGDIR/build.log" 2>&1 || build_failed
	# No service may start while packages install.
	printf '#!/bin/sh\nexit 101\n' >"$BUILD_TMP/usr/sbin/policy-rc.d"
	chmod 0755 "$BUILD_TMP/usr/sbin/policy-rc.d"
	mount_root "$BUILD_TMP"
	say "debootstrap took $((SECONDS - t0))s; installing ${PACKAGES[*]} (about 40 s), ${FORKY_PACKAGES[*]} from forky"
	install_python_packages "$BUILD_TMP" "${PACKAGES[@]}" >>"$LOGDIR/build.log" 2>&1 || build_failed
	chroot "$BUILD_TMP" /usr/bin/test -x /usr/sbin/slurmctld || build_failed
	local slurm_suite=${SLURM_SUITE[$VERSION]} sid=("${SID_PACKAGES[@]}")
	# A version not trixie's comes from sid (SLURM_SUITE), with apptainer.
	[ "$slurm_suite" = "$SUITE" ] || sid+=("${SLURM_PACKAGES[@]}")
	say "installing ${sid[*]} from sid"
	install_pinned "$BUILD_TMP" sid "${sid[@]}" >>"$LOGDIR/build.log" 2>&1 || build_failed
	local got
	# The installed Slurm is the version asked for (sbatch --version needs a
	# slurm.conf, which configure writes later).
	got=$(chroot "$BUILD_TMP" /usr/bin/dpkg-query -W -f '${Version}' slurmctld 2>&1) || build_failed
	case $got in
	"$VERSION".*) ;;
	*)
		say "the root's Slurm is $got, not $VERSION"
		build_failed
		;;
	esac
	say "building enroot and pyxis from the pinned sources"
	build_runtimes "$BUILD_TMP" >>"$LOGDIR/build.log" 2>&1 || build_failed
	recipe_stamp >"$BUILD_TMP/etc/flare-slurm-build"
	umount_under "$BUILD_TMP"
	sync -f "$BUILD_TMP" 2>/dev/null || sync
	if [ -e "$ROOT" ]; then
		old="$ROOT.old.$$"
		mv "$ROOT" "$old"
		mv "$BUILD_TMP" "$ROOT"
		rm -rf --one-file-system "$old"
	else
		mv "$BUILD_TMP" "$ROOT"
	fi
	BUILD_TMP=
	trap - EXIT
	say "root built in $((SECONDS - t0))s: $ROOT"
}

# ---------------------------------------------------------------------- nvflare

# nvflare_source: the host directory of the NVFlare source tree (it holds
# nvflare/__init__.py), or nothing. An explicit FLARE_SLURM_NVFLARE is the only
# candidate when set; otherwise the checkout's ../shared/nvflare, then the
# project machines' /work/shared/nvflare (a fresh clone elsewhere has no ../shared).
nvflare_candidates() {
	if [ -n "${FLARE_SLURM_NVFLARE:-}" ]; then
		echo "$FLARE_SLURM_NVFLARE"
	else
		echo "$SCRIPT_DIR/../../../shared/nvflare"
		echo /work/shared/nvflare
	fi
}

nvflare_source() {
	local d
	while read -r d; do
		if [ -f "$d/nvflare/__init__.py" ]; then
			(cd "$d" && pwd -P)
			return 0
		fi
	done < <(nvflare_candidates)
	return 1
}

nvflare_missing_reason() {
	local tried
	tried=$(nvflare_candidates | paste -sd, - | sed 's/,/, /g')
	echo "no NVFlare source tree (a directory holding nvflare/__init__.py) at $tried; set FLARE_SLURM_NVFLARE to the pinned NVFlare source, then run cluster.sh up"
}

# nvflare_hash DIR: the tree's hash (tree_hash), the key of the copy in the root.
nvflare_hash() { tree_hash "$1"; }

# sync_nvflare: make the root's /opt/nvflare a root-owned, read-only copy of the
# NVFlare source with compiled byte code, unless the stamp says it already is.
# Without a source, the copy is removed (no test may run a stale tree).
sync_nvflare() {
	local src sum dst=$ROOT$NVFLARE_IN_ROOT tmp old
	if ! src=$(nvflare_source); then
		rm -f "$ROOT$NVFLARE_STAMP"
		rm -rf --one-file-system "$dst"
		say "the NVFlare tier cannot run: $(nvflare_missing_reason)"
		return 0
	fi
	sum=$(nvflare_hash "$src")
	if [ -d "$dst" ] && [ "$(head -n 1 "$ROOT$NVFLARE_STAMP" 2>/dev/null)" = "sha256=$sum" ]; then
		return 0
	fi
	say "copying NVFlare from $src to $NVFLARE_IN_ROOT in the root"
	for old in "$dst".new.* "$dst".old.*; do
		[ -e "$old" ] || continue
		rm -rf --one-file-system "$old"
	done
	tmp=$dst.new.$$
	mkdir -p "$tmp"
	tar -C "$src" --exclude=__pycache__ --exclude='*.pyc' -cf - . |
		tar -C "$tmp" --no-same-owner --no-same-permissions -xf - ||
		die "copying $src into the root failed"
	chown -R 0:0 "$tmp"
	chmod -R u+rwX,go+rX,go-w "$tmp"
	# Byte code now, as root: the test account cannot write __pycache__ here.
	inroot /usr/bin/python3 -m compileall -q -s "${tmp#"$ROOT"}" -p "$NVFLARE_IN_ROOT" \
		"${tmp#"$ROOT"}" >>"$LOGDIR/build.log" 2>&1 ||
		die "compiling NVFlare's byte code failed; see $LOGDIR/build.log"
	rm -f "$ROOT$NVFLARE_STAMP"
	if [ -e "$dst" ]; then
		mv "$dst" "$dst.old.$$"
	fi
	mv "$tmp" "$dst"
	rm -rf --one-file-system "$dst.old.$$"
	printf 'sha256=%s\nsource=%s\n' "$sum" "$src" >"$ROOT$NVFLARE_STAMP"
}

# -------------------------------------------------------------------- configure

write_file() { # write_file PATH MODE OWNER (content on stdin)
	local path=$ROOT$1
	mkdir -p "$(dirname "$path")"
	cat >"$path.tmp"
	chmod "$2" "$path.tmp"
	chown "$3" "$path.tmp"
	mv -f "$path.tmp" "$path"
}

# configure: everything that depends on this machine or on this script, written
# fresh on every cold start of the daemons.
configure() {
	local host fqdn slurm_ids munge_ids mysql_ids
	host=$(host_short)
	fqdn=$(uname -n)
	slurm_ids=$(ids slurm)
	munge_ids=$(ids munge)
	mysql_ids=$(ids mysql)
	local su=${slurm_ids% *} sg=${slurm_ids#* } mu=${munge_ids% *} mg=${munge_ids#* }
	local yu=${mysql_ids% *} yg=${mysql_ids#* }

	{
		echo "127.0.0.1 localhost $host${fqdn:+ $fqdn}"
		echo "::1 localhost ip6-localhost ip6-loopback"
		echo "$LOGIN_ADDR $LOGIN_HOST"
		local n
		for n in "${NODES[@]}"; do echo "${NODE_ADDR[$n]} $n"; done
	} | write_file /etc/hosts 0644 0:0
	echo "$host" | write_file /etc/hostname 0644 0:0

	# The test account: uid >= 1000, private home and workspace.
	if ! grep -q "^$TEST_USER:" "$ROOT/etc/passwd"; then
		inroot groupadd -g "$TEST_UID" "$TEST_USER"
		inroot useradd -u "$TEST_UID" -g "$TEST_UID" -d "$TEST_HOME" -s /bin/bash -M "$TEST_USER"
	fi
	install -d -m 0700 -o "$TEST_UID" -g "$TEST_UID" "$ROOT$TEST_HOME" "$ROOT$TEST_WS" "$ROOT$TEST_HOME/tmp"

	# Directories of the daemons.
	install -d -m 0755 -o "$su" -g "$sg" "$ROOT/var/spool/slurmctld" "$ROOT/var/log/slurm"
	install -d -m 0755 -o 0 -g 0 "$ROOT/var/spool/slurmd" "$ROOT/var/spool/slurmd/$host"
	for n in "${NODES[@]}"; do install -d -m 0755 -o 0 -g 0 "$ROOT/var/spool/slurmd/$n"; done
	install -d -m 0700 -o "$mu" -g "$mg" "$ROOT/etc/munge" "$ROOT/var/lib/munge" "$ROOT/var/log/munge"
	install -d -m 0755 -o "$yu" -g "$yg" "$ROOT/var/lib/mysql"
	if [ ! -s "$ROOT/etc/munge/munge.key" ]; then
		inroot mungekey --create --keyfile=/etc/munge/munge.key >/dev/null
	fi
	chown "$mu:$mg" "$ROOT/etc/munge/munge.key"
	chmod 0600 "$ROOT/etc/munge/munge.key"

	write_file /etc/mysql/mariadb.conf.d/99-flare-slurm.cnf 0644 0:0 <<-EOF
		[mysqld]
		bind-address = 127.0.0.1
		port = $DB_PORT
		socket = /run/mysqld/mysqld.sock
		pid-file = /run/mysqld/mysqld.pid
		skip-name-resolve
		innodb_buffer_pool_size = 512M
		innodb_log_file_size = 64M
		innodb_lock_wait_timeout = 900
		[client]
		socket = /run/mysqld/mysqld.sock
	EOF

	write_file /etc/slurm/slurmdbd.conf 0600 "$su:$sg" <<-EOF
		# Written by runtime/slurmtest/cluster.sh; rewritten on every cold start.
		AuthType=auth/munge
		DbdHost=$host
		DbdAddr=$LOGIN_ADDR
		DbdPort=$DBD_PORT
		SlurmUser=slurm
		PidFile=/run/slurm/slurmdbd.pid
		StorageType=accounting_storage/mysql
		StorageHost=127.0.0.1
		StoragePort=$DB_PORT
		StorageUser=slurm
		StoragePass=$DB_PASS
		StorageLoc=slurm_acct_db
	EOF

	# Clients (sacctmgr too) need slurm.conf before slurmdbd is asked anything:
	# munge credentials are restricted to the SlurmUser it names. FirstJobId is
	# set again from accounting before slurmctld starts.
	write_slurm_conf 1

	write_file /etc/slurm/cgroup.conf 0644 0:0 <<-EOF
		CgroupPlugin=disabled
	EOF
	# Stand-in GPUs: character devices with NVIDIA's major number but no driver
	# behind them (opening one fails). They let jobs request --gres=gpu:N and see
	# CUDA_VISIBLE_DEVICES set by Slurm; no GPU work can run.
	local g
	for ((g = 0; g < NODE_GPUS; g++)); do
		[ -c "$ROOT/dev/nvidia$g" ] || mknod -m 0666 "$ROOT/dev/nvidia$g" c 195 "$g"
	done
	write_file /etc/slurm/gres.conf 0644 0:0 <<-EOF
		NodeName=$host,$(node_list) Name=gpu File=/dev/nvidia[0-$((NODE_GPUS - 1))]
	EOF
	configure_containers
}

# configure_containers: what a compute node running apptainer and pyxis+enroot
# has: /dev/fuse (apptainer mounts a SIF's squashfs with squashfuse in the
# job's user namespace), a /dev/log socket (enroot binds it into containers
# when /dev is restricted; nothing listens, as on a node without syslog), the
# pyxis plugin in plugstack.conf (srun, sbatch and slurmstepd load it) and
# enroot's site configuration: per-node, per-user runtime and data
# directories on tmpfs (a container's root is unpacked there per job step, as
# sites put it on node-local storage; the test nodes share the root's /run,
# so the node's name is part of the path, or two nodes unpacking the same
# step's container would collide), the user's home not mounted, /dev
# restricted to the basic devices, read-only container roots by default.
configure_containers() {
	[ -c "$ROOT/dev/fuse" ] || mknod -m 0666 "$ROOT/dev/fuse" c 10 229
	[ -S "$ROOT/dev/log" ] || inroot /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("/dev/log")'
	if [ -f "$ROOT$PYXIS_PLUGIN" ]; then
		echo "required $PYXIS_PLUGIN" | write_file /etc/slurm/plugstack.conf 0644 0:0
	else
		rm -f "$ROOT/etc/slurm/plugstack.conf"
	fi
	if [ -x "$ROOT/usr/local/bin/enroot" ]; then
		write_file /etc/enroot/enroot.conf 0644 0:0 <<-'EOF'
			# Written by runtime/slurmtest/cluster.sh: the test cluster's site configuration.
			ENROOT_RUNTIME_PATH /run/enroot/runtime/$(hostname)/user-$(id -u)
			ENROOT_CACHE_PATH /run/enroot/cache/$(hostname)/user-$(id -u)
			ENROOT_DATA_PATH /run/enroot/data/$(hostname)/user-$(id -u)
			ENROOT_MOUNT_HOME no
			ENROOT_RESTRICT_DEV yes
			ENROOT_ROOTFS_WRITABLE no
		EOF
	fi
}

node_list() { local IFS=,; echo "${NODES[*]}"; }

# write_slurm_conf FIRST_JOB_ID
write_slurm_conf() {
	local host n nodes=""
	host=$(host_short)
	for n in "${NODES[@]}"; do
		nodes+="NodeName=$n NodeAddr=${NODE_ADDR[$n]} CPUs=$NODE_CPUS RealMemory=$NODE_MEM_MB Gres=gpu:$NODE_GPUS State=UNKNOWN"$'\n'
	done
	write_file /etc/slurm/slurm.conf 0644 0:0 <<-EOF
		# Written by runtime/slurmtest/cluster.sh; rewritten on every cold start.
		# Every address is one that the host and every node namespace reach:
		# the login side ($LOGIN_ADDR) on the node network.
		ClusterName=$CLUSTER
		SlurmctldHost=$host($LOGIN_ADDR)
		SlurmUser=slurm
		SlurmctldPort=$CTLD_PORT
		SlurmdPort=$SLURMD_PORT
		AuthType=auth/munge
		CredType=cred/munge
		StateSaveLocation=/var/spool/slurmctld
		SlurmdSpoolDir=/var/spool/slurmd/%n
		SlurmctldPidFile=/run/slurm/slurmctld.pid
		SlurmdPidFile=/run/slurm/slurmd-%n.pid
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		JobAcctGatherType=jobacct_gather/none
		SelectType=select/cons_tres
		SelectTypeParameters=CR_CPU
		SchedulerType=sched/backfill
		MpiDefault=none
		ReturnToService=2
		KillWait=5
		SlurmdTimeout=300
		InactiveLimit=0
		FirstJobId=$1
		# The node declares what the tests need, not what the machine has.
		SlurmdParameters=config_overrides
		GresTypes=gpu
		AccountingStorageType=accounting_storage/slurmdbd
		AccountingStorageHost=$LOGIN_ADDR
		AccountingStoragePort=$DBD_PORT
		AccountingStorageEnforce=associations
		JobCompType=jobcomp/none
		# The daemons log to stderr (cluster.sh's log dir); with a time to the
		# millisecond on every line, so that make bench-federation reads when
		# slurmctld recorded a job's end (accounting's End has whole seconds).
		LogTimeFormat=iso8601_ms,format_stderr
		# The default partition: the host itself, in the host's network namespace.
		NodeName=$host NodeAddr=127.0.0.1 CPUs=$NODE_CPUS RealMemory=$NODE_MEM_MB Gres=gpu:$NODE_GPUS State=UNKNOWN
		PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
		# Multi-node jobs: one node per network namespace, on the node network.
		${nodes}PartitionName=$MULTI_PARTITION Nodes=$(node_list) MaxTime=INFINITE State=UP
	EOF
}

# runtime_dirs: the root's /run is a fresh tmpfs per cold start, so no stale
# socket, PID file or lock of an earlier run survives.
runtime_dirs() {
	local slurm_ids munge_ids mysql_ids
	slurm_ids=$(ids slurm)
	munge_ids=$(ids munge)
	mysql_ids=$(ids mysql)
	mountpoint -q "$ROOT/run" || mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$ROOT/run" || return 1
	mkdir -p "$ROOT/dev/shm"
	mountpoint -q "$ROOT/dev/shm" || mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$ROOT/dev/shm" || return 1
	install -d -m 0755 -o "${munge_ids% *}" -g "${munge_ids#* }" "$ROOT/run/munge"
	install -d -m 0755 -o "${mysql_ids% *}" -g "${mysql_ids#* }" "$ROOT/run/mysqld"
	install -d -m 0755 -o "${slurm_ids% *}" -g "${slurm_ids#* }" "$ROOT/run/slurm"
	install -d -m 1777 "$ROOT/run/lock"
	# enroot's per-node, per-user directories (configure_containers), made
	# for the test account, private to it.
	local d n
	for d in runtime cache data; do
		for n in $(all_nodes); do
			install -d -m 0755 -o 0 -g 0 "$ROOT/run/enroot" "$ROOT/run/enroot/$d" "$ROOT/run/enroot/$d/$n"
			install -d -m 0700 -o "$TEST_UID" -g "$TEST_UID" "$ROOT/run/enroot/$d/$n/user-$TEST_UID"
		done
	done
}

# ---------------------------------------------------------------------- daemons

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

db_ping() { inroot mariadb-admin --connect-timeout=2 ping; }
sql() { inroot mariadb --batch --skip-column-names -e "$1"; }

start_mariadbd() {
	alive mariadbd && return 0
	[ -d "$ROOT/var/lib/mysql/mysql" ] || {
		say "initialising the MariaDB data directory"
		inroot mariadb-install-db --user=mysql --skip-test-db >>"$LOGDIR/mariadbd.log" 2>&1 || return 1
	}
	launch mariadbd "" --user=mysql || return 1
	wait_for 60 "mariadbd" db_ping || return 1
	# slurmdbd over MariaDB's socket fails (_check_mysql_concat_is_sane): it uses
	# TCP, so the grant is for 127.0.0.1; the database must exist before its first start.
	sql "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
		CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
		ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
		GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
}

munge_ok() { inroot sh -c 'munge -n | unmunge'; }

start_munged() {
	alive munged && return 0
	local mi
	mi=$(ids munge)
	launch munged "${mi% *}:${mi#* }" --foreground || return 1
	wait_for 30 "munged" munge_ok
}

dbd_ok() { inroot timeout 10 sacctmgr -n -P show cluster format=cluster; }

start_slurmdbd() {
	alive slurmdbd && return 0
	launch slurmdbd "" -D || return 1
	wait_for 120 "slurmdbd" dbd_ok
}

register() {
	if ! inroot sacctmgr -n -P show cluster format=cluster | grep -qx "$CLUSTER"; then
		inroot sacctmgr -i add cluster "$CLUSTER" >/dev/null || return 1
	fi
	if ! inroot sacctmgr -n -P show account format=account | grep -qx "$ACCOUNT"; then
		inroot sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" \
			Description="flare-slurm tests" Organization=flare >/dev/null || return 1
	fi
	if ! inroot sacctmgr -n -P show user format=user | grep -qx "$TEST_USER"; then
		inroot sacctmgr -i add user "$TEST_USER" Account="$ACCOUNT" DefaultAccount="$ACCOUNT" \
			Cluster="$CLUSTER" >/dev/null || return 1
	fi
}

# next_job_id: one past the largest job ID accounting has seen, so a lost
# slurmctld state never reuses an ID that sacct already knows.
next_job_id() {
	local n
	n=$(sql "SELECT COALESCE(MAX(id_job), 0) + 1 FROM slurm_acct_db.${CLUSTER}_job_table" 2>/dev/null) || n=1
	[[ $n =~ ^[0-9]+$ ]] || n=1
	echo "$n"
}

ctld_ok() { inroot scontrol ping | grep -q 'is UP'; }

start_slurmctld() {
	alive slurmctld && return 0
	launch slurmctld "" -D -i || return 1
	wait_for 60 "slurmctld" ctld_ok
}

all_nodes() { echo "$(host_short)" "${NODES[@]}"; }

# node_states: "NAME STATE" per node (once per partition it is in).
node_states() { inroot sinfo -h -N -o '%N %t' 2>/dev/null; }

# node_ok: every node (the host's and the namespace nodes) is up and usable.
node_ok() {
	local st n
	st=$(node_states) || return 1
	for n in $(all_nodes); do
		awk -v n="$n" '$1 == n { seen = 1; if ($2 !~ /^(idle|mix|alloc|comp|plnd)-?$/) bad = 1 }
			END { exit !(seen && !bad) }' <<<"$st" || return 1
	done
}

node_resume_if_needed() {
	local st n
	st=$(node_states) || return 0
	for n in $(awk '$2 ~ /^(drain|down|drng|fail)/ { print $1 }' <<<"$st" | sort -u); do
		inroot scontrol update nodename="$n" state=resume >/dev/null 2>&1 || true
	done
	return 0
}

start_slurmd() {
	if ! alive slurmd; then
		launch slurmd "" -D -N "$(host_short)" || return 1
	fi
	local n
	for n in "${NODES[@]}"; do
		alive "slurmd-$n" && continue
		NODE=$n launch "slurmd-$n" "" -D -N "$n" || return 1
	done
	local deadline=$((SECONDS + 60))
	until node_ok; do
		node_resume_if_needed
		if [ "$SECONDS" -ge "$deadline" ]; then
			say "timed out waiting for the nodes to become idle: $(inroot sinfo -h -N -o '%N %t %E' 2>&1)"
			return 1
		fi
		sleep 0.5
	done
}

sacct_ok() { inroot sacct -X -n --starttime=now --format=JobIDRaw; }

all_alive() {
	local d
	for d in "${DAEMONS[@]}"; do alive "$d" || return 1; done
}

any_alive() {
	local d
	for d in "${DAEMONS[@]}"; do alive "$d" && return 0; done
	return 1
}

healthy() { mntns_ok && all_alive && net_ok && ctld_ok && node_ok && sacct_ok; }

show_logs() {
	local d
	for d in "${DAEMONS[@]}"; do
		[ -s "$LOGDIR/$d.log" ] || continue
		say "--- last lines of $LOGDIR/$d.log"
		tail -n 15 "$LOGDIR/$d.log" >&2
	done
}

# cold_reset: nothing of ours runs; clear every trace of an earlier run.
cold_reset() {
	sweep
	mntns_down
	umount_under "$ROOT"
	rm -f "$STATE"/*.pid
	# A fresh scheduler every cold start: after a crash, slurmctld's saved state
	# would revive jobs that already ended. Accounting (the database) is kept,
	# and FirstJobId continues after the last job it knows.
	rm -rf --one-file-system "$ROOT/var/spool/slurmctld" "$ROOT/var/spool/slurmd"
	local d
	for d in "${DAEMONS[@]}"; do : >"$LOGDIR/$d.log"; done
	local p
	for p in $CTLD_PORT $SLURMD_PORT $DBD_PORT $DB_PORT; do
		port_busy "$p" && die "127.0.0.1:$p is already in use by another program; the test cluster needs ports $CTLD_PORT, $SLURMD_PORT, $DBD_PORT and $DB_PORT"
	done
	net_up
}

start_all() {
	local cold=$1
	# Called in a condition, where set -e does not apply: check every step.
	# A cold start has just built the node network (cold_reset); daemons that
	# still run need the one they were started in.
	if [ "$cold" = 0 ] && ! net_ok; then
		say "the node network is incomplete"
		return 1
	fi
	mount_root "$ROOT" || return 1
	mount_devices "$ROOT" || return 1
	runtime_dirs || return 1
	if [ "$cold" = 1 ]; then
		mntns_up || return 1
		running_stamp >"$RUNNING"
	elif ! mntns_ok; then
		say "the cluster's mount namespace is gone"
		return 1
	fi
	start_mariadbd || return 1
	start_munged || return 1
	start_slurmdbd || return 1
	register || return 1
	if [ "$cold" = 1 ]; then
		write_slurm_conf "$(next_job_id)" || return 1
	fi
	start_slurmctld || return 1
	start_slurmd || return 1
	wait_for 60 "sacct" sacct_ok
}

# refuse_other_running: one cluster at a time (the same ports and node
# network): another version's cluster must be stopped first.
refuse_other_running() {
	local other
	other=$(other_running) || return 0
	die "the Slurm ${other%% *} test cluster (root ${other#* }) is running; stop it first: FLARE_SLURM_VERSION=${other%% *} $0 down (or just $0 down, which stops whichever runs)"
}

do_up() {
	local t0=$SECONDS
	lock
	refuse_other_running
	if ! root_is_current; then
		any_alive && do_down_locked
		build_root
	fi
	sync_nvflare
	build_images
	if healthy >/dev/null 2>&1; then
		say "already up ($(host_short), $(inroot sbatch --version))"
		return 0
	fi
	local cold=0
	if ! any_alive; then
		cold=1
		cold_reset
		configure
	fi
	if ! start_all "$cold"; then
		if [ "$cold" = 0 ]; then
			say "a partial restart failed; restarting every daemon"
			do_down_locked
			cold_reset
			configure
			start_all 1 || {
				show_logs
				die "the cluster did not come up"
			}
		else
			show_logs
			die "the cluster did not come up"
		fi
	fi
	say "up in $((SECONDS - t0))s: nodes $(all_nodes) idle, accounting answers ($(inroot sbatch --version))"
}

cancel_jobs() {
	ctld_ok >/dev/null 2>&1 || return 0
	local ids
	ids=$(inroot squeue -h -o %i 2>/dev/null) || return 0
	[ -z "$ids" ] && return 0
	say "cancelling jobs: $(echo $ids)"
	inroot scancel $ids >/dev/null 2>&1 || true
	local deadline=$((SECONDS + 20))
	while [ -n "$(inroot squeue -h -o %i 2>/dev/null)" ] && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 0.5
	done
}

do_down_locked() {
	if [ -d "$ROOT" ]; then
		alive slurmctld && cancel_jobs
		local i
		for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do
			stop_daemon "${DAEMONS[i]}"
		done
		sweep
		mntns_down
		umount_under "$ROOT"
	fi
	mntns_down
	net_down
	rm -f "$STATE"/*.pid "$RUNNING"
}

do_down() {
	lock
	local other
	# down stops whichever cluster runs, this version's or another's.
	if other=$(other_running); then
		VERSION=${other%% *}
		ROOT=${other#* }
		REAL_BIN=()
	fi
	do_down_locked
	say "down (Slurm $VERSION)"
}

do_status() {
	local d pid rc=0
	for d in "${DAEMONS[@]}"; do
		if pid=$(pid_of "$d"); then
			printf '%-15s running (pid %s)\n' "$d" "$pid"
		else
			printf '%-15s stopped\n' "$d"
			rc=3
		fi
	done
	if net_ok; then
		echo "node network   $NET.0/24 on $BRIDGE (login side $LOGIN_ADDR)"
	else
		echo "node network   incomplete or absent"
		rc=3
	fi
	if alive slurmctld; then
		inroot sinfo -N -o '%N %P %t %c %m %G' 2>&1 || rc=3
	fi
	if [ "$rc" = 0 ] && ! healthy >/dev/null 2>&1; then
		echo "daemons run but the cluster is not healthy (a node not idle or sacct not answering)"
		rc=3
	fi
	[ "$rc" = 0 ] && echo "cluster is up"
	return "$rc"
}

need_up() {
	root_is_current && [ -n "$(mounts_under "$ROOT")" ] ||
		die "the cluster is not up (run: cluster.sh up)"
}

do_env() {
	cat <<-EOF
		ROOT=$(canon_root)
		STATE=$STATE
		CLUSTER=$CLUSTER
		ACCOUNT=$ACCOUNT
		PARTITION=debug
		NODE=$(host_short)
		TEST_USER=$TEST_USER
		TEST_UID=$TEST_UID
		TEST_GID=$TEST_UID
		TEST_HOME=$TEST_HOME
		TEST_WS=$TEST_WS
		PATH_IN_ROOT=$IN_PATH
		NVFLARE_ROOT=$NVFLARE_IN_ROOT
		NVFLARE_STAMP=$NVFLARE_STAMP
		MULTI_PARTITION=$MULTI_PARTITION
		MULTI_NODES=$(node_list)
		MULTI_ADDRS=$(for n in "${NODES[@]}"; do printf '%s\n' "${NODE_ADDR[$n]}"; done | paste -sd, -)
		LOGIN_ADDR=$LOGIN_ADDR
		LOGIN_HOST=$LOGIN_HOST
		SLURM_VERSION=$VERSION
		APPTAINER_IMAGE=$IMAGE_DIR/$IMAGE_NAME.sif
		PYXIS_IMAGE=$IMAGE_DIR/$IMAGE_NAME.sqsh
		PYXIS_PLUGIN=$PYXIS_PLUGIN
	EOF
	if ! enroot_source >/dev/null || ! pyxis_source >/dev/null; then
		echo "CONTAINERS_MISSING=$(runtime_missing_reason)"
	fi
	local src
	if src=$(nvflare_source); then
		echo "NVFLARE_SOURCE=$src"
	else
		echo "NVFLARE_MISSING=$(nvflare_missing_reason)"
	fi
}

cmd=${1:-}
case $cmd in
ports-free)
	why=$(ports_taken) && {
		echo "cluster.sh: $why" >&2
		exit 1
	}
	exit 0
	;;
can-run)
	why=$(can_run) || {
		echo "cluster.sh: cannot run here: $why" >&2
		exit 1
	}
	;;
up)
	require_can_run
	do_up
	;;
down)
	# Stopping needs no free port: down stops whichever version runs.
	require_can_run build
	do_down
	;;
status)
	require_can_run
	do_status
	;;
env)
	do_env
	;;
stop-ctld)
	require_can_run
	lock
	stop_daemon slurmctld
	say "slurmctld stopped"
	;;
start-ctld)
	require_can_run
	lock
	need_up
	start_slurmctld || die "slurmctld did not start"
	wait_for 60 "the nodes" node_ok || die "the nodes did not return"
	say "slurmctld started"
	;;
stop-dbd)
	require_can_run
	lock
	stop_daemon slurmdbd
	say "slurmdbd stopped"
	;;
start-dbd)
	require_can_run
	lock
	need_up
	start_slurmdbd || die "slurmdbd did not start"
	wait_for 60 "sacct" sacct_ok || die "sacct does not answer"
	say "slurmdbd started"
	;;
build)
	require_can_run build
	lock
	if root_is_current; then
		say "root is current: $ROOT"
	else
		# Another version's cluster may run meanwhile: a build touches only
		# this version's root.
		any_alive && do_down_locked
		build_root
	fi
	sync_nvflare
	build_images
	;;
versions)
	printf '%s\n' "${SLURM_VERSIONS[@]}"
	;;
purge)
	require_can_run
	lock
	refuse_other_running
	do_down_locked
	umount_under "$(dirname "$ROOT")"
	rm -rf --one-file-system "$ROOT" "$ROOT".build.* "$ROOT".old.*
	say "removed $ROOT"
	;;
*)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2
	exit 2
	;;
esac
