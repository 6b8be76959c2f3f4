// Package nodeproxy serves the pods/log, pods/exec, pods/attach and
// pods/portforward subresources as kube-apiserver does: it checks the
// request against the pod (its container, its node), then proxies to the
// node agent's daemon endpoint (the Node's InternalIP and
// status.daemonEndpoints.kubeletEndpoint.port) with the API server's
// client certificate.
//
// The agent speaks SPDY for exec, attach and port-forward. kubectl v1.32+
// asks for WebSocket first; as kube-apiserver does for a node that does
// not declare ExtendWebSocketsToKubelet, the WebSocket RemoteCommand (v5)
// is translated to SPDY (k8s.io/apiserver/pkg/util/proxy's
// StreamTranslatorHandler) and the WebSocket port-forward tunnel is
// unwrapped to SPDY (TunnelingHandler). Plain SPDY upgrades pass through
// apimachinery's UpgradeAwareHandler.
//
// Errors are upstream's, as metav1.Status: a container the pod does not
// have, a pod not yet scheduled, an agent that does not answer, and the
// agent's own refusals (passed on as GenericHttpResponseChecker does).
package nodeproxy
