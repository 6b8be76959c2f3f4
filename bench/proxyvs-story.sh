#!/usr/bin/env bash
# bench/proxyvs-story.sh [1|2]: the README's user story (issue 28), as a new user types it, on
# one node (`kite server --container-runtime=containerd`) and then across two (a second `kite
# agent` joined by token in a network namespace of its own, as `scripts/conformance --agents 2`
# does). It prints every command ("$ ...") and what answered: the transcript docs/network.md
# quotes. Run it as root. Each node is in a network namespace of its own (kite-story-n1 at
# 10.216.0.1 for `kite server` and its containerd, kite-story-n2 at 10.216.0.2 for the joined
# agent), both on one layer-2 bridge (kite-story0, no address) as host-gw needs; the nodes' kite0
# bridges, nftables tables and the DNS server's port 53 are theirs, so the host's network is not
# touched and no host-net lock is needed. kubectl runs in n1.
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
AGNHOST=registry.k8s.io/e2e-test-images/agnhost:2.66.1
bridge=kite-story0 net=10.216.0
log() { echo "story: $(date -u +%T) $*" >&2; }

# The pods' containers stay when their node stops (as on a real node): their shims (ours when
# they serve a containerd under $W) and their processes go, then the mounts under $W.
reap() {
	local p c
	for p in $(pgrep -f containerd-shim-runc-v2); do
		grep -qF "$W/" "/proc/$p/cmdline" 2>/dev/null || continue
		for c in $(pgrep -P "$p"); do kill -KILL "$c"; done
		kill -KILL "$p"
	done
	sleep 1
	awk -v w="$W/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
}
reap # what an earlier run left
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
	reap
	for n in 1 2; do [[ -e /run/netns/kite-story-n$n ]] && ip netns delete "kite-story-n$n"; done
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

flags=(--data-dir "$W/data" --secure-port 0 --port 0 --container-runtime=containerd --eviction-hard='memory.available<100Mi'
	--bind-address "$net.1" --node-ip "$net.1")
ip link add "$bridge" type bridge
ip link set "$bridge" up
for n in $(seq "$nodes"); do
	ns=kite-story-n$n
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip link add "$ns" type veth peer name eth0 netns "$ns"
	ip link set "$ns" master "$bridge" up
	ip -n "$ns" addr add "$net.$n/24" dev eth0
	ip -n "$ns" link set eth0 up
	# A default route, as a node has (the agent's node IP and DNS forwarding want one).
	ip -n "$ns" route add default dev eth0
done
in1() { nsenter --net=/run/netns/kite-story-n1 -- "$@"; }
kubectl() { in1 /usr/bin/kubectl "$@"; }
log "kite server ${flags[*]}"
# nsenter itself, not the in1 function, in the background: $! is then the server (nsenter execs
# it), which the clean-up stops; a backgrounded function would be a subshell of its own.
nsenter --net=/run/netns/kite-story-n1 -- "$KITE" server "${flags[@]}" >"$W/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 240); do grep -q '^kite: ready' "$W/server.log" 2>/dev/null && break; sleep 0.5; done
grep -q '^kite: ready' "$W/server.log" || { tail -20 "$W/server.log" >&2; exit 1; }
export KUBECONFIG=$W/data/kubeconfig
run in1 "$KITE" images import --data-dir "$W/data" "$repo"/.cache/images/{pause,busybox,nginx,agnhost}.tar
if [[ $nodes == 2 ]]; then
	ns=kite-story-n2
	join=$(in1 "$KITE" token create --data-dir "$W/data" --ttl 1h --print-join-command)
	read -r -a join <<<"$join"
	echo "\$ ${join[*]:0:4} --token <token> ${join[*]:6} --hostname-override node-2 --node-ip $net.2 --container-runtime=containerd ...   # in netns $ns"
	nsenter --net="/run/netns/$ns" -- "$KITE" "${join[@]:1}" --hostname-override node-2 --root-dir "$W/agent-2" \
		--node-ip "$net.2" --container-runtime=containerd --eviction-hard='memory.available<100Mi' >"$W/agent-2.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 240); do [[ -S $W/agent-2/containerd/containerd.sock ]] && break; sleep 0.5; done
	run nsenter --net=/run/netns/$ns -- "$KITE" images import --root-dir "$W/agent-2" "$repo"/.cache/images/{pause,busybox,nginx,agnhost}.tar
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
# The story's line word for word: kubectl's --restart defaults to Always, so the pod never ends
# and kubectl only attaches; the agent replays the first session of a stdin-once container
# (docs/network.md). Three times, each a new pod.
for i in 1 2 3; do
	run_tty nsenter --net=/run/netns/kite-story-n1 -- kubectl run client-a$i --image=$BUSYBOX --rm -it -- wget -qO- web
done
run_tty nsenter --net=/run/netns/kite-story-n1 -- kubectl run client --image=$BUSYBOX --rm -it --restart=Never -- wget -qO- web
# kubectl attaches once it sees the pod Running; a wget that is done by then printed into a
# terminal nobody was attached to (docs/network.md): the same with the client outliving the attach.
run_tty nsenter --net=/run/netns/kite-story-n1 -- kubectl run client-t --image=$BUSYBOX --rm -it --restart=Never -- sh -c 'sleep 2; wget -qO- web'
# Without a terminal, the same one-shot client (kubectl attaches to its output, or reads its log).
run kubectl run client-i --image=$BUSYBOX --rm -i --restart=Never -- wget -qO- -T 5 web
# A client that stays, asked by name, by cluster IP and by a pod's own address.
run kubectl run probe --image=$BUSYBOX --restart=Never -- sleep 3600
run kubectl wait --for=condition=Ready pod/probe --timeout=120s
run kubectl exec probe -- cat /etc/resolv.conf
run kubectl exec probe -- nslookup web
run kubectl exec probe -- wget -qO- -T 5 web
run kubectl exec probe -- wget -qO- -T 5 "$(kubectl get service web -o jsonpath='{.spec.clusterIP}')"
for ip in $(kubectl get pods -l app=web -o jsonpath='{.items[*].status.podIP}'); do
	run kubectl exec probe -- wget -qO- -T 5 "$ip"
done
# The same from agnhost (its `connect`: a TCP connection, exit 0 when it is accepted).
run kubectl run probe2 --image=$AGNHOST --restart=Never -- pause
run kubectl wait --for=condition=Ready pod/probe2 --timeout=120s
run kubectl exec probe2 -- /agnhost connect --timeout=5s web:80
run kubectl exec probe2 -- /agnhost connect --timeout=5s "$(kubectl get service web -o jsonpath='{.spec.clusterIP}'):80"
for ip in $(kubectl get pods -l app=web -o jsonpath='{.items[*].status.podIP}'); do
	run kubectl exec probe2 -- /agnhost connect --timeout=5s "$ip:80"
done
run kubectl get pods probe probe2 -o wide
# From every node: clients pinned to each, six times each.
for n in $(kubectl get nodes -o name); do
	node=${n#node/}
	for i in 1 2 3 4 5 6; do
		run kubectl run "client-$node-$i" --image=$AGNHOST --restart=Never --overrides "{\"spec\":{\"nodeName\":\"$node\"}}" -- connect --timeout=5s web:80
	done
done
for _ in $(seq 120); do
	[[ -z $(kubectl get pods -l 'run,run notin (probe,probe2)' -o jsonpath='{range .items[?(@.status.phase=="Pending")]}{.metadata.name} {end}{range .items[?(@.status.phase=="Running")]}{.metadata.name} {end}' 2>/dev/null) ]] && break
	sleep 1
done
run kubectl get pods -l run -o wide
for p in $(kubectl get pods -l run -o name); do
	[[ $p == pod/probe || $p == pod/probe2 ]] && continue
	echo "# $p: exit $(kubectl get "$p" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}'), $(kubectl logs "$p" 2>&1 | grep -c 'Welcome to nginx') answer(s) with 'Welcome to nginx'; log: $(kubectl logs "$p" 2>&1 | grep -v '<' | head -2 | tr '\n' ' ')"
done
for p in $(kubectl get pods -l app=web -o name); do
	echo "# $p ($(kubectl get "$p" -o jsonpath='{.spec.nodeName} {.status.podIP}')): $(kubectl logs "$p" 2>/dev/null | grep -c '"GET / ') GET / logged"
done
run kubectl delete pods -l run --wait=false
