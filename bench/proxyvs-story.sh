#!/usr/bin/env bash
# bench/proxyvs-story.sh [1|2]: the README's user story (issue 28), as a new user types it, on
# one node (`kite server --container-runtime=containerd`) and then across two (a second `kite
# agent` joined by token in a network namespace of its own, as `scripts/conformance --agents 2`
# does). It prints every command ("$ ...") and what answered: the transcript docs/network.md
# quotes. Run it as root under the host-net lock (the server's node uses the host's network
# namespace: the kite0 bridge, nftables, port 53):
#
#   flock /tmp/kite-hostnet.lock bench/proxyvs-story.sh 2
#
# This machine reaches no registry, so the images are the local ones of scripts/images
# (.cache/images), imported with `kite images import`, under their own names: `nginx` and
# `busybox` (:latest, pulled Always) cannot be pulled here. With a registry the commands are the
# README's, word for word.
#
# Env: W (work dir, default /tmp/proxyvs/story, deleted at the end unless KEEP=1), KITE (kite
# binary, default: go build ./cmd/kite).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
nodes=${1:-2}
W=${W:-/tmp/proxyvs/story}
NGINX=registry.k8s.io/e2e-test-images/nginx:1.27.0-2
BUSYBOX=registry.k8s.io/e2e-test-images/busybox:1.37.0-2
bridge=kite-story0 net=10.216.0 ns=kite-story-n2
log() { echo "story: $(date -u +%T) $*" >&2; }

rm -rf "$W"
mkdir -p "$W"
if [[ -z "${KITE:-}" ]]; then
	KITE=$W/kite
	(cd "$repo" && go build -o "$KITE" ./cmd/kite)
fi
[[ -f $repo/.cache/images/nginx.tar ]] || "$repo/scripts/images" --conformance >"$W/images.log" 2>&1
export PATH=$W/bin:$PATH
mkdir -p "$W/bin"

pids=()
cleanup() {
	set +e
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do
		for _ in $(seq 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[[ -e /run/netns/$ns ]] && ip netns delete "$ns"
	ip link show "$bridge" >/dev/null 2>&1 && ip link delete "$bridge"
	[[ ${KEEP:-0} == 1 ]] || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# $ command, then its output, both on stdout.
run() {
	echo "\$ $*"
	"$@" 2>&1 || echo "(exit $?)"
}
# The same through a terminal, for `kubectl run -it` (script(1) gives it one).
run_tty() {
	echo "\$ $*"
	script -qec "$(printf '%q ' "$@")" /dev/null 2>&1 | tr -d '\r' || echo "(exit $?)"
}

flags=(--data-dir "$W/data" --secure-port 0 --port 0 --container-runtime=containerd --eviction-hard='memory.available<100Mi')
if [[ $nodes == 2 ]]; then
	# As scripts/conformance --agents 2: the server's node on a bridge, node 2 in a namespace
	# of its own on the same layer-2 segment (host-gw routes each podCIDR through a node's IP).
	ip link add "$bridge" type bridge
	ip addr add "$net.1/24" dev "$bridge"
	ip link set "$bridge" up
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip link add "$ns" type veth peer name eth0 netns "$ns"
	ip link set "$ns" master "$bridge" up
	ip -n "$ns" addr add "$net.2/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via "$net.1"
	flags+=(--bind-address "$net.1" --node-ip "$net.1")
fi
log "kite server ${flags[*]}"
"$KITE" server "${flags[@]}" >"$W/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 240); do grep -q '^kite: ready' "$W/server.log" 2>/dev/null && break; sleep 0.5; done
grep -q '^kite: ready' "$W/server.log" || { tail -20 "$W/server.log" >&2; exit 1; }
export KUBECONFIG=$W/data/kubeconfig
run "$KITE" images import --data-dir "$W/data" "$repo"/.cache/images/{pause,busybox,nginx}.tar
if [[ $nodes == 2 ]]; then
	join=$("$KITE" token create --data-dir "$W/data" --ttl 1h --print-join-command)
	read -r -a join <<<"$join"
	echo "\$ ${join[*]:0:4} --token <token> ${join[*]:6} --hostname-override node-2 --node-ip $net.2 --container-runtime=containerd ...   # in netns $ns"
	nsenter --net="/run/netns/$ns" -- "$KITE" "${join[@]:1}" --hostname-override node-2 --root-dir "$W/agent-2" \
		--node-ip "$net.2" --container-runtime=containerd --eviction-hard='memory.available<100Mi' >"$W/agent-2.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 240); do [[ -S $W/agent-2/containerd/containerd.sock ]] && break; sleep 0.5; done
	run "$KITE" images import --root-dir "$W/agent-2" "$repo"/.cache/images/{pause,busybox,nginx}.tar
	for _ in $(seq 240); do
		[[ $(kubectl get node node-2 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]] && break
		sleep 0.5
	done
fi
run kubectl get nodes -o wide
# The default ServiceAccount comes from a controller: a pod created before it exists is refused.
for _ in $(seq 120); do kubectl get serviceaccount default >/dev/null 2>&1 && break; sleep 0.5; done

run kubectl create deployment web --image=$NGINX --replicas=3
run kubectl expose deployment web --port 80
run kubectl rollout status deployment web --timeout=180s
run kubectl get pods -o wide
run kubectl get service web
run kubectl get endpointslices -l kubernetes.io/service-name=web
run_tty kubectl run client --image=$BUSYBOX --rm -it --restart=Never -- wget -qO- web
# Every replica answers, from every node: clients pinned to each node, as many times as it takes
# until each web pod's nginx has logged a request.
for n in $(kubectl get nodes -o name); do
	node=${n#node/}
	for i in 1 2 3 4 5 6; do
		run kubectl run "client-$node-$i" --image=$BUSYBOX --restart=Never --overrides "{\"spec\":{\"nodeName\":\"$node\"}}" -- wget -qO- -T 5 web
	done
done
for _ in $(seq 120); do
	[[ -z $(kubectl get pods -l run -o jsonpath='{range .items[?(@.status.phase!="Succeeded")]}{.metadata.name} {end}' 2>/dev/null) ]] && break
	sleep 1
done
run kubectl get pods -l run -o wide
for p in $(kubectl get pods -l run -o name); do
	echo "# $p: $(kubectl logs "$p" 2>&1 | grep -c 'Welcome to nginx') answer(s) with 'Welcome to nginx'"
done
for p in $(kubectl get pods -l app=web -o name); do
	echo "# $p ($(kubectl get "$p" -o jsonpath='{.spec.nodeName} {.status.podIP}')): $(kubectl logs "$p" 2>/dev/null | grep -c '"GET / ') GET / logged"
done
run kubectl delete pods -l run --wait=false
