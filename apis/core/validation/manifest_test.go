package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kite-project/kite/apis/core/defaults"
)

// Real-world manifests, defaulted, must pass: a kubeadm static pod (host
// network, probes on the host, hostPath volumes, seccomp, priority class)
// and a Deployment-style pod with the usual trimmings.
func TestValidatePodAcceptsRealManifests(t *testing.T) {
	manifests := map[string]string{
		"kubeadm etcd": `
apiVersion: v1
kind: Pod
metadata:
  name: etcd-node1
  namespace: kube-system
  labels: {component: etcd, tier: control-plane}
  annotations:
    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://10.0.0.10:2379
    kubernetes.io/config.mirror: 0123456789abcdef
spec:
  nodeName: node1
  hostNetwork: true
  priority: 2000001000
  priorityClassName: system-node-critical
  securityContext: {seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.5.15-0
    command: [etcd, --data-dir=/var/lib/etcd]
    livenessProbe:
      httpGet: {host: 127.0.0.1, path: /livez, port: 2381, scheme: HTTP}
      failureThreshold: 8
      initialDelaySeconds: 10
      timeoutSeconds: 15
    startupProbe:
      httpGet: {host: 127.0.0.1, path: /readyz, port: 2381, scheme: HTTP}
      failureThreshold: 24
    resources: {requests: {cpu: 100m, memory: 100Mi}}
    volumeMounts:
    - {name: etcd-data, mountPath: /var/lib/etcd}
  volumes:
  - name: etcd-data
    hostPath: {path: /var/lib/etcd, type: DirectoryOrCreate}
`,
		"web app": `
apiVersion: v1
kind: Pod
metadata:
  name: web-7d4b9c-x2x8q
  namespace: default
  labels: {app: web, pod-template-hash: 7d4b9c}
spec:
  serviceAccountName: default
  initContainers:
  - name: migrate
    image: example.com/web:1.2.3
    args: [migrate]
  - name: proxy
    image: envoyproxy/envoy:v1.31
    restartPolicy: Always
    ports: [{containerPort: 9901, name: admin}]
    readinessProbe: {tcpSocket: {port: admin}}
  containers:
  - name: web
    image: example.com/web:1.2.3
    ports: [{containerPort: 8080, name: http}]
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: web-secrets, key: password}}}
    envFrom: [{configMapRef: {name: web-config}}]
    resources:
      limits: {cpu: "1", memory: 512Mi}
    readinessProbe: {httpGet: {path: /healthz, port: http}}
    lifecycle: {preStop: {sleep: {seconds: 5}}}
    securityContext: {runAsNonRoot: true, runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    volumeMounts:
    - {name: config, mountPath: /etc/web}
    - {name: podinfo, mountPath: /etc/podinfo}
    - {name: cache, mountPath: /cache}
  volumes:
  - {name: config, configMap: {name: web-config, items: [{key: app.yaml, path: app.yaml}]}}
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: cpu, resourceFieldRef: {containerName: web, resource: limits.cpu}}
  - {name: cache, emptyDir: {sizeLimit: 1Gi}}
  - name: token
    projected:
      sources:
      - serviceAccountToken: {path: token}
      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          labelSelector: {matchLabels: {app: web}}
          topologyKey: kubernetes.io/hostname
  tolerations:
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: web}}}
`,
	}
	for name, m := range manifests {
		t.Run(name, func(t *testing.T) {
			var pod corev1.Pod
			if err := yaml.UnmarshalStrict([]byte(m), &pod); err != nil {
				t.Fatalf("decoding: %v", err)
			}
			defaults.Pod(&pod)
			checkErrors(t, ValidatePod(&pod))
		})
	}
}
