// Package server is the agent's HTTPS server, what the kubelet serves on
// 10250: /healthz, /pods, /containerLogs, and the streaming endpoints
// /exec, /attach and /portForward, which the API server's pods/log,
// pods/exec, pods/attach and pods/portforward proxy to.
//
// The streaming protocols (SPDY remotecommand v1…v4, port-forward) are
// upstream's, served by k8s.io/cri-streaming; kubectl's WebSocket is
// translated to SPDY by the API server, as kube-apiserver does for a node
// that does not declare ExtendWebSocketsToKubelet.
//
// Only the API server's client certificate (a certificate of the cluster
// CA) or the admin bearer token is let in: anything else gets 401.
package server
