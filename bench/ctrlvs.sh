#!/usr/bin/env bash
# bench/ctrlvs.sh [ROUNDS]: Kite's StatefulSet, DaemonSet and disruption controllers beside
# kube-controller-manager 1.37.2's (issue 25), measured by bench/ctrlvs against 100 hollow nodes
# (ctrlvs plays their kubelets through the API: bound pods are marked Running and Ready, deleted
# ones removed), alternating kite, kcm, kite, kcm, ... each on a fresh `kite apiserver
# --unsafe-no-fsync` on 127.0.0.1 (no pods run, nothing touches the network).
#
# Both sides run the same helpers in the API server's process (namespace, service account and
# token controllers, the root CA publisher and Kite's scheduler, which binds the StatefulSet's
# and the DaemonSet's pods); what differs is who runs statefulset, daemonset and disruption:
#   kite: kite apiserver --controllers ...,statefulset-controller,daemonset-controller,disruption-controller
#   kcm:  kube-controller-manager --controllers=statefulset,daemonset,disruption with its client
#         limiter lifted (--kube-api-qps=10000 --kube-api-burst=10000; Kite's in-process
#         controllers have none), or with its defaults (20/30) when KCM_QPS=default.
#
# Env: W (default /tmp/bench/ctrlvs, deleted at the end unless KEEP=1), KITE (default: go build
# ./cmd/kite), KCM (default /tmp/k8sbuild/bin/kube-controller-manager, from
# ../shared/tools/k8s-build.sh ./cmd/kube-controller-manager), NODES and REPLICAS (default 100),
# ONLY (a subset of sts,ds,evict), BASE (another kite binary, e.g. of the commit before a change:
# each round then runs base, kite, kcm, so that before/after/kcm alternate under the same load),
# SIDES (default "kite kcm", or "base kite kcm" with BASE), TIMELINE (a directory: each run's
# pod events go to TIMELINE/<side>-<round>.jsonl, ctrlvs --timeline), KITE_GOMAXPROCS (GOMAXPROCS
# of the kite and base API servers only, to give the one-process side as many runnable threads as
# the two processes of the kcm side on a saturated machine).
# Output: one JSON line per run.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2}
W=${W:-/tmp/bench/ctrlvs}
KCM=${KCM:-/tmp/k8sbuild/bin/kube-controller-manager}
log() { echo "ctrlvs: $(date -u +%T) $*" >&2; }
mkdir -p "$W"
if [[ -z "${KITE:-}" ]]; then
	KITE=$W/kite
	(cd "$repo" && go build -o "$KITE" ./cmd/kite)
fi
(cd "$repo/bench" && go build -o "$W/ctrlvs" ./ctrlvs)

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[[ ${KEEP:-0} == 1 ]] || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

common=namespace-controller,serviceaccount-controller,serviceaccount-token-controller,root-ca-cert-publisher,scheduler
kcm_limits=(--kube-api-qps=10000 --kube-api-burst=10000)
[[ ${KCM_QPS:-} == default ]] && kcm_limits=()

sides=${SIDES:-kite kcm}
[[ -n ${BASE:-} && -z ${SIDES:-} ]] && sides="base kite kcm"
only=()
[[ -n ${ONLY:-} ]] && only=(--only "$ONLY")
[[ -n ${TIMELINE:-} ]] && mkdir -p "$TIMELINE"

for ((i = 1; i <= rounds; i++)); do
	for side in $sides; do
		d=$W/$side-$i
		ctrls=$common
		bin=$KITE
		[[ $side == base ]] && bin=$BASE
		[[ $side != kcm ]] && ctrls+=,statefulset-controller,daemonset-controller,disruption-controller
		log "round $i: $side (load $(cut -d' ' -f1-3 /proc/loadavg))"
		procs=()
		[[ $side != kcm && -n ${KITE_GOMAXPROCS:-} ]] && procs=(env GOMAXPROCS="$KITE_GOMAXPROCS")
		tl=()
		[[ -n ${TIMELINE:-} ]] && tl=(--timeline "$TIMELINE/$side-$i.jsonl")
		"${procs[@]}" "$bin" apiserver --data-dir "$d" --secure-port 0 --unsafe-no-fsync --controllers "$ctrls" >"$d.log" 2>&1 &
		api=$!
		pids+=("$api")
		for _ in $(seq 240); do grep -q '^kite: ready' "$d.log" 2>/dev/null && break; sleep 0.5; done
		kcm=
		if [[ $side == kcm ]]; then
			"$KCM" --kubeconfig "$d/kubeconfig" --controllers=statefulset,daemonset,disruption \
				--leader-elect=false --secure-port=0 --use-service-account-credentials=false \
				"${kcm_limits[@]}" >"$d-kcm.log" 2>&1 &
			kcm=$!
			pids+=("$kcm")
		fi
		"$W/ctrlvs" --kubeconfig "$d/kubeconfig" --label "$side round $i" --nodes "${NODES:-100}" --replicas "${REPLICAS:-100}" "${only[@]}" "${tl[@]}" || log "$side round $i failed"
		[[ -n $kcm ]] && { kill "$kcm"; wait "$kcm" 2>/dev/null || true; }
		kill "$api"
		wait "$api" 2>/dev/null || true
	done
done
