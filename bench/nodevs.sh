#!/usr/bin/env bash
# bench/nodevs.sh [ROUNDS]: the upstream kubelet 1.37.2 beside Kite's agent over the same
# containerd (issue 27), measured by bench/nodevs in the same run, alternating kubelet, kite,
# kubelet, kite, ... so that the machine's load hits both alike.
#
# Everything runs in a network namespace of its own (kitebench: lo and a dummy interface with
# 10.251.0.1, the nodes' InternalIP), entered with nsenter --net only (ip netns exec would remount
# /sys and hide the cgroup hierarchy): a `kite apiserver` with its default controllers on
# 127.0.0.1, one containerd (own root, state and socket under $W/ctrd; CNI bridge bench0 with
# host-local addresses from 10.252.0.0/16; sandbox image registry.k8s.io/pause:3.10.2) with the
# pause and busybox images of scripts/images imported, and in turn the kubelet (node
# kubelet-node) and `kite agent` (node kite-node) on that containerd. The two never run at once:
# each would remove the other's sandboxes as unknown. Each side's pods are deleted and its
# sandboxes gone before the other starts. The host's network namespace is not touched, so no
# host-net lock is needed.
#
# Env: W (work dir, default /tmp/bench/nodevs, deleted at the end unless KEEP=1), KITE (kite
# binary, default: go build ./cmd/kite), KUBELET (default /tmp/k8sbuild/bin/kubelet, from
# ../shared/tools/k8s-build.sh ./cmd/kubelet), SEQ (pods one at a time, default 30), BURST
# (default 110), IDLE (default 60s), CTRD_LOG (containerd's --log-level, e.g. trace to count the
# CRI calls per side in $W/containerd.log; it costs containerd CPU), SIDES (default "kubelet kite";
# a side named kite-NAME runs the binary in $KITE_NAME, e.g. SIDES="kite kite-new" KITE_new=...
# alternates two builds of the agent; a side named floor or floor-N runs no agent: nodevs --floor
# starts BURST pods straight over containerd's CRI, N (default 8) in flight, the least time any
# agent could take on this containerd, see bench/nodevs/floor.go). Output: one JSON line per run on stdout; burst_cpu is the
# CPU seconds per component during the burst (bench/nodevs/acct.go: BSD process accounting for
# the processes that exit, /proc for the agent, containerd and the shims), seq_cpu the same over
# the one-at-a-time phase (per_pod_s, per_pod_excl_s: per pod, with and without the agent's own).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2}
W=${W:-/tmp/bench/nodevs}
KUBELET=${KUBELET:-/tmp/k8sbuild/bin/kubelet}
SEQ=${SEQ:-30} BURST=${BURST:-110} IDLE=${IDLE:-60s}
netns=kitebench
log() { echo "nodevs: $(date -u +%T) $*" >&2; }

# One run at a time on a machine: two would share the network namespace's name (the first one's
# cleanup deletes the second's) and each other's CPU. A run waits for the one before it, cleanup
# included (the lock is held until this shell exits).
exec 9>/tmp/kite-nodevs.lock
flock -n 9 || { log "waiting for another bench/nodevs.sh run to end"; flock 9; }

mkdir -p "$W"
if [[ -z "${KITE:-}" ]]; then
	KITE=$W/kite
	(cd "$repo" && go build -o "$KITE" ./cmd/kite)
fi
(cd "$repo/bench" && go build -o "$W/nodevs" ./nodevs)

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	# The shims of containers left behind (a failed run) are ours when they run in our state dir.
	for p in $(pgrep -f containerd-shim-runc-v2 || true); do
		[[ $(readlink "/proc/$p/cwd" 2>/dev/null) == "$W"/* ]] && kill "$p" 2>/dev/null || true
	done
	# The kubelet's and the agent's volume mounts (and containerd's) under $W, deepest first.
	awk -v w="$W/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
	ip netns del "$netns" 2>/dev/null || true
	[[ ${KEEP:-0} == 1 ]] || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$netns"
inns() { nsenter --net=/var/run/netns/$netns "$@"; }
inns ip link set lo up
# A veth pair with both ends inside (this kernel has no dummy links): the nodes' address and a
# default route, which the kubelet's node IP detection wants.
inns ip link add bench1 type veth peer name bench2
inns ip addr add 10.251.0.1/24 dev bench1
inns ip link set bench1 up
inns ip link set bench2 up
inns ip route add default dev bench1

log "images (scripts/images: pause, busybox)"
"$repo/scripts/images" -o "$W/images" >"$W/images.log" 2>&1

c=$W/ctrd
mkdir -p "$c/net.d"
sock=$c/containerd.sock
cat >"$c/config.toml" <<EOF
version = 2
root = "$c/root"
state = "$c/state"
oom_score = 0
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10.2"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_tls_streaming = false
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$c/net.d"
EOF
cat >"$c/net.d/10-bench.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "bench", "plugins": [
  {"type": "bridge", "bridge": "bench0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.252.0.0/16"}]], "dataDir": "$c/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
log "containerd"
nsenter --net=/var/run/netns/$netns containerd --config "$c/config.toml" ${CTRD_LOG:+--log-level "$CTRD_LOG"} >"$W/containerd.log" 2>&1 &
ctrd_pid=$!
pids+=($ctrd_pid)
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.2; done
ctr() { command ctr --address "$sock" -n k8s.io "$@"; }
for _ in $(seq 50); do ctr images ls -q >/dev/null 2>&1 && break; sleep 0.2; done
for f in pause busybox; do ctr images import "$W/images/$f.tar" >>"$W/images.log" 2>&1; done

log "kite apiserver"
nsenter --net=/var/run/netns/$netns "$KITE" apiserver --data-dir "$W/api" --secure-port 6443 --unsafe-no-fsync >"$W/apiserver.log" 2>&1 &
pids+=($!)
for _ in $(seq 240); do grep -q '^kite: ready' "$W/apiserver.log" 2>/dev/null && break; sleep 0.5; done
# Both agents reach the API server through nodevs's proxy: it drops the kubelet's Service field
# selector spec.clusterIP!=None, which Kite's API server refuses (see bench/nodevs/proxy.go).
nsenter --net=/var/run/netns/$netns "$W/nodevs" --kubeconfig "$W/api/kubeconfig" --proxy 127.0.0.1:6444 --proxy-kubeconfig "$W/proxy.kubeconfig" 2>"$W/proxy.log" &
pids+=($!)
for _ in $(seq 50); do [[ -s $W/proxy.kubeconfig ]] && break; sleep 0.2; done
kc=$W/proxy.kubeconfig
kubectl() { inns /usr/bin/kubectl --kubeconfig "$kc" "$@"; }

side_pid=
start_side() { # kubelet|kite
	case $1 in
	kubelet)
		nsenter --net=/var/run/netns/$netns "$KUBELET" --kubeconfig "$kc" --hostname-override kubelet-node --node-ip 10.251.0.1 \
			--container-runtime-endpoint "unix://$sock" --root-dir "$W/kubelet" --cert-dir "$W/kubelet/pki" \
			--cgroup-driver cgroupfs --cgroups-per-qos=false --enforce-node-allocatable= \
			--fail-swap-on=false --fail-cgroupv1=false --eviction-hard 'memory.available<100Mi' \
			--image-gc-high-threshold 100 --image-gc-low-threshold 99 --read-only-port 0 \
			--authentication-token-webhook=false --authorization-mode AlwaysAllow --max-pods 110 \
			>>"$W/kubelet.log" 2>&1 &
		;;
	kite*)
		bin=$KITE
		if [[ $1 == kite-* ]]; then
			v=KITE_${1#kite-}
			bin=${!v}
		fi
		nsenter --net=/var/run/netns/$netns "$bin" agent --kubeconfig "$kc" --hostname-override kite-node --node-ip 10.251.0.1 \
			--container-runtime-endpoint "unix://$sock" --root-dir "$W/$1" --proxy-mode none \
			--pod-routes none --eviction-hard 'memory.available<100Mi' \
			--image-gc-high-threshold 100 --image-gc-low-threshold 99 --max-pods 110 \
			>>"$W/$1.log" 2>&1 &
		;;
	esac
	side_pid=$! # nsenter without --fork execs the agent: this is the agent's PID
	pids+=("$side_pid")
}
node_of() { [[ $1 == kubelet ]] && echo kubelet-node || echo kite-node; }

for ((i = 1; i <= rounds; i++)); do
	for side in ${SIDES:-kubelet kite}; do
		if [[ $side == floor* ]]; then
			par=8
			[[ $side == floor-* ]] && par=${side#floor-}
			log "round $i: $side: $BURST pods straight over the CRI, $par in flight (load $(cut -d' ' -f1-3 /proc/loadavg))"
			inns "$W/nodevs" --floor --floor-parallel "$par" --floor-dir "$W/floor" --label "$side round $i" \
				--seq "$SEQ" --burst "$BURST" --containerd-pid "$ctrd_pid" --containerd-socket "$sock" --acct-dir "$W" || log "$side round $i failed"
			continue
		fi
		node=$(node_of "$side")
		log "round $i: $side (load $(cut -d' ' -f1-3 /proc/loadavg))"
		start_side "$side"
		# Ready. A node that was down may still carry the not-ready/unreachable taints for a while;
		# pods bound by name tolerate those NoExecute taints for 300 s (DefaultTolerationSeconds).
		state=
		for _ in $(seq 240); do
			state=$(kubectl get node "$node" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.spec.taints[*].key}' 2>/dev/null || true)
			[[ $state == True* ]] && break
			sleep 0.5
		done
		log "$node: Ready (load $(cut -d' ' -f1-3 /proc/loadavg)), taints: ${state#True}"
		inns "$W/nodevs" --kubeconfig "$kc" --node "$node" --pid "$side_pid" --label "$side round $i" \
			--seq "$SEQ" --burst "$BURST" --idle "$IDLE" \
			--containerd-pid "$ctrd_pid" --containerd-socket "$sock" --acct-dir "$W" || log "$side round $i failed"
		# Every sandbox gone (the side removes its deleted pods' sandboxes) before the other starts.
		for _ in $(seq 240); do
			[[ -z $(ctr containers ls -q 2>/dev/null) ]] && break
			sleep 0.5
		done
		left=$(ctr containers ls -q 2>/dev/null | wc -l)
		[[ $left == 0 ]] || log "$side left $left containers in containerd"
		kill "$side_pid"
		wait "$side_pid" 2>/dev/null || true
	done
done
