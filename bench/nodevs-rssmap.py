#!/usr/bin/env python3
# bench/nodevs-rssmap.py PID BINARY [N]: which parts of BINARY's mappings are
# resident in process PID (its file-backed RSS), by Go package and, for pages
# no symbol covers, by ELF section (.rodata, .gopclntab), from the present
# bits of /proc/PID/pagemap (root) and `go tool nm -size` (cached in
# BINARY.nm when that file exists). Prints the N (default 60) largest.
# Used for the agent's memory in bench/README.md (issue 27, session 15).
import sys, struct, subprocess, bisect, collections, re
pid, binary = sys.argv[1], sys.argv[2]
PAGE = 4096
maps = []
for line in open(f"/proc/{pid}/maps"):
    f = line.split()
    if len(f) >= 6 and f[5].endswith(binary.split('/')[-1]):
        lo, hi = (int(x, 16) for x in f[0].split('-'))
        maps.append((lo, hi, f[1]))
present = []
with open(f"/proc/{pid}/pagemap", "rb") as pm:
    for lo, hi, perm in maps:
        pm.seek(lo // PAGE * 8)
        data = pm.read((hi - lo) // PAGE * 8)
        for i in range(len(data) // 8):
            v = struct.unpack_from("<Q", data, i * 8)[0]
            if v >> 63 & 1 or v >> 62 & 1:
                present.append((lo + i * PAGE, perm))
syms = []
import os
out = open(binary + ".nm").read() if os.path.exists(binary + ".nm") else subprocess.run(["go", "tool", "nm", "-size", "-sort", "address", binary], capture_output=True, text=True).stdout
secs = []
for line in subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True).stdout.splitlines():
    m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
    if m and int(m.group(2), 16): secs.append((int(m.group(2), 16), int(m.group(3), 16), m.group(1)))
def section(a):
    for lo, size, name in secs:
        if lo <= a < lo + size: return name
    return "?"
for line in out.splitlines():
    f = line.split()
    if len(f) < 4: continue
    try: addr = int(f[0], 16); size = int(f[1])
    except ValueError: continue
    syms.append((addr, size, f[2], " ".join(f[3:])))
addrs = [s[0] for s in syms]
def pkg(name):
    if name.startswith("type:") or name.startswith("go:"): 
        return name.split(".")[0] if not name.startswith("type:") else "type:*"
    m = re.match(r"^(.*?/)?([^/]*?)\.", name)
    if not m: return name
    return (m.group(1) or "") + m.group(2)
bypkg = collections.Counter(); byperm = collections.Counter()
for a, perm in present:
    byperm[perm] += 1
    # symbols overlapping the page
    i = bisect.bisect_right(addrs, a + PAGE - 1) - 1
    hit = collections.Counter()
    while i >= 0 and syms[i][0] + max(syms[i][1], 1) > a:
        s = syms[i]
        ov = min(s[0] + s[1], a + PAGE) - max(s[0], a)
        if ov > 0: hit[pkg(s[3])] += ov
        i -= 1
        if a - syms[i][0] > 64 << 20: break
    tot = sum(hit.values()) or 1
    if not hit: bypkg["(no symbol) " + section(a)] += PAGE
    for k, v in hit.items(): bypkg[k] += PAGE * v / tot
print("resident pages of", binary, "by mapping permission:", {k: f"{v*4/1024:.1f} MiB" for k, v in byperm.items()})
# group by top-level module path
def group(p):
    for pre in ["k8s.io/kubernetes/", "k8s.io/api/", "k8s.io/apimachinery/", "k8s.io/client-go/", "k8s.io/apiserver/", "k8s.io/apiextensions-apiserver/", "k8s.io/kube-openapi/", "github.com/kite-project/kite/", "go.etcd.io/", "google.golang.org/", "github.com/google/cel-go", "github.com/gogo/", "github.com/golang/protobuf", "k8s.io/kube-aggregator/", "k8s.io/component-base/", "k8s.io/cri-api/", "go.opentelemetry.io/", "github.com/prometheus/"]:
        if p.startswith(pre):
            rest = p[len(pre):].split("/")
            return pre + "/".join(rest[:2])
    return p
g = collections.Counter()
for k, v in bypkg.items(): g[group(k)] += v
for k, v in g.most_common(int(sys.argv[3]) if len(sys.argv) > 3 else 60):
    print(f"{v/1048576:8.2f} MiB  {k}")
