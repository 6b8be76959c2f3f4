package apicoverage_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// newKind is one kind of issue 26 in the table: a valid object, an invalid
// one and the field paths upstream's 422 names for it.
type newKind struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	valid      string
	invalid    string
	fields     []string
}

func newKinds(t *testing.T) []newKind {
	ca, csr, csrPEM := testCA(t), testCSR(t, false), testCSR(t, true)
	gvr := func(group, version, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
	}
	return []newKind{
		{gvr("", "v1", "limitranges"), true,
			`{spec: {limits: [{type: Container, max: {cpu: "1"}, min: {cpu: 100m}}]}}`,
			`{spec: {limits: [{type: Container, max: {cpu: "1"}, min: {cpu: "2"}}]}}`,
			[]string{"spec.limits[0].min[cpu]"}},
		{gvr("", "v1", "resourcequotas"), true,
			`{spec: {hard: {pods: "10"}}}`,
			`{spec: {hard: {pods: "-1"}, scopes: [BestEffort, NotBestEffort]}}`,
			[]string{"spec.hard[pods]", "spec.scopes"}},
		{gvr("networking.k8s.io", "v1", "ingressclasses"), false,
			`{spec: {controller: example.com/ingress-nginx}}`,
			`{spec: {controller: ingress-nginx, parameters: {kind: Config, name: p, scope: Namespace}}}`,
			[]string{"spec.controller", "spec.parameters.namespace"}},
		{gvr("networking.k8s.io", "v1", "ingresses"), true,
			`{spec: {rules: [{host: www.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]}}`,
			`{spec: {rules: [{host: 10.0.0.1, http: {paths: [{path: /, backend: {service: {name: web, port: {number: 80}}}}]}}]}}`,
			[]string{"spec.rules[0].host", "spec.rules[0].http.paths[0].pathType"}},
		{gvr("networking.k8s.io", "v1", "networkpolicies"), true,
			`{spec: {podSelector: {}, ingress: [{ports: [{port: 80}]}]}}`,
			`{spec: {podSelector: {}, policyTypes: [Sideways], ingress: [{from: [{}]}]}}`,
			[]string{"spec.ingress[0].from[0]", "spec.policyTypes[0]"}},
		{gvr("node.k8s.io", "v1", "runtimeclasses"), false,
			`{handler: runc}`,
			`{handler: Not_A_Label}`,
			[]string{"handler"}},
		{gvr("scheduling.k8s.io", "v1", "priorityclasses"), false,
			`{value: 1000, description: high}`,
			`{value: 2000000000, preemptionPolicy: Sometimes}`,
			[]string{"value", "preemptionPolicy"}},
		{gvr("storage.k8s.io", "v1", "csidrivers"), false,
			`{spec: {}}`,
			`{spec: {fsGroupPolicy: Bogus, volumeLifecycleModes: [Forever]}}`,
			[]string{"spec.fsGroupPolicy", "spec.volumeLifecycleModes"}},
		{gvr("storage.k8s.io", "v1", "csinodes"), false,
			`{spec: {drivers: [{name: csi.example.com, nodeID: node-1}]}}`,
			`{spec: {drivers: [{name: csi.example.com, nodeID: ""}]}}`,
			[]string{"spec.drivers[0].nodeID"}},
		{gvr("storage.k8s.io", "v1", "csistoragecapacities"), true,
			`{storageClassName: standard, capacity: 10Gi}`,
			`{storageClassName: Not_A_Class}`,
			[]string{"storageClassName"}},
		{gvr("storage.k8s.io", "v1", "volumeattachments"), false,
			`{spec: {attacher: csi.example.com, nodeName: node-1, source: {persistentVolumeName: pv-1}}}`,
			`{spec: {attacher: "", nodeName: node-1, source: {}}}`,
			[]string{"spec.attacher", "spec.source"}},
		{gvr("storage.k8s.io", "v1", "volumeattributesclasses"), false,
			`{driverName: csi.example.com, parameters: {iops: "100"}}`,
			`{driverName: csi.example.com}`,
			[]string{"parameters"}},
		{gvr("certificates.k8s.io", "v1", "clustertrustbundles"), false,
			`{spec: {trustBundle: ` + quote(ca) + `}}`,
			`{spec: {trustBundle: "not a PEM block"}}`,
			[]string{"spec.trustBundle"}},
		{gvr("certificates.k8s.io", "v1", "certificatesigningrequests"), false,
			`{spec: {signerName: example.com/signer, usages: [client auth], request: ` + csrPEM + `}}`,
			`{spec: {signerName: signer, usages: [client auth, bogus], expirationSeconds: 60, request: ` + csrPEM + `}}`,
			[]string{"spec.signerName", "spec.usages[1]", "spec.expirationSeconds"}},
		{gvr("certificates.k8s.io", "v1", "podcertificaterequests"), true,
			`{spec: {signerName: example.com/signer, podName: web, podUID: "1", serviceAccountName: default, serviceAccountUID: "2", nodeName: node-1, nodeUID: "3", stubPKCS10Request: ` + csr + `}}`,
			`{spec: {signerName: signer, podName: web, podUID: "1", serviceAccountName: default, serviceAccountUID: "2", nodeName: node-1, nodeUID: "3", stubPKCS10Request: ` + csr + `}}`,
			[]string{"spec.signerName"}},
		{gvr("resource.k8s.io", "v1", "deviceclasses"), false,
			`{spec: {selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]}}`,
			`{spec: {selectors: [{}]}}`,
			[]string{"spec.selectors[0].cel"}},
		{gvr("resource.k8s.io", "v1", "devicetaintrules"), false,
			`{spec: {taint: {key: example.com/broken, effect: NoSchedule}}}`,
			`{spec: {taint: {key: example.com/broken, effect: Sometimes}}}`,
			[]string{"spec.taint.effect"}},
		{gvr("resource.k8s.io", "v1", "resourceclaims"), true,
			`{spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}`,
			`{spec: {devices: {requests: [{name: gpu}]}}}`,
			[]string{"spec.devices.requests[0]"}},
		{gvr("resource.k8s.io", "v1", "resourceclaimtemplates"), true,
			`{spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}}`,
			`{spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com, allocationMode: Some}}]}}}}`,
			[]string{"spec.spec.devices.requests[0].exactly.allocationMode"}},
		{gvr("resource.k8s.io", "v1", "resourceslices"), false,
			`{spec: {driver: gpu.example.com, pool: {name: pool-1, resourceSliceCount: 1}, nodeName: node-1, devices: [{name: gpu-0}]}}`,
			`{spec: {driver: gpu.example.com, pool: {name: pool-1, resourceSliceCount: 1}}}`,
			[]string{"spec"}},
		{gvr("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"), false,
			`{spec: {priorityLevelConfiguration: {name: global-default}, matchingPrecedence: 500, rules: [{subjects: [{kind: Group, group: {name: example}}], nonResourceRules: [{verbs: [get], nonResourceURLs: ["*"]}]}]}}`,
			`{spec: {priorityLevelConfiguration: {name: global-default}, matchingPrecedence: 1}}`,
			[]string{"spec.matchingPrecedence"}},
		{gvr("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"), false,
			`{spec: {type: Limited, limited: {limitResponse: {type: Reject}}}}`,
			`{spec: {type: Limited}}`,
			[]string{"spec.limited"}},
		{gvr("apiregistration.k8s.io", "v1", "apiservices"), false,
			`{spec: {group: metrics.k8s.io, version: v1beta1, groupPriorityMinimum: 100, versionPriority: 100, service: {namespace: kube-system, name: metrics-server}}}`,
			`{spec: {group: metrics.k8s.io, version: v1beta1, groupPriorityMinimum: 30000, versionPriority: 100}}`,
			[]string{"metadata.name", "spec.groupPriorityMinimum"}},
		{gvr("storagemigration.k8s.io", "v1", "storageversionmigrations"), false,
			`{spec: {resource: {group: apps, resource: deployments}}}`,
			`{spec: {resource: {group: apps}}}`,
			[]string{"spec.resource.resource"}},
	}
}

// TestNewKindsValidateAsUpstream creates a valid and an invalid object of
// every kind issue 26 adds, through client-go: the valid one is stored and
// read back as JSON and as protobuf, the invalid one is refused with 422
// naming upstream's field paths.
func TestNewKindsValidateAsUpstream(t *testing.T) {
	dc := dynamic.NewForConfigOrDie(config(t))
	ns := newNamespace(t)
	for _, k := range newKinds(t) {
		t.Run(k.gvr.Resource, func(t *testing.T) {
			ctx := t.Context()
			res := dc.Resource(k.gvr).Namespace("")
			if k.namespaced {
				res = dc.Resource(k.gvr).Namespace(ns)
			}
			name := "valid-" + k.gvr.Resource
			switch k.gvr.Resource {
			case "csidrivers":
				name = "csi.example.com"
			case "apiservices":
				name = "v1beta1.metrics.k8s.io"
			}
			created, err := res.Create(ctx, object(t, k, name, k.valid), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create valid: %v", err)
			}
			t.Cleanup(func() { res.Delete(context.Background(), name, metav1.DeleteOptions{}) })
			if created.GetUID() == "" || created.GetResourceVersion() == "" {
				t.Errorf("created object has no uid or resourceVersion: %v", created.Object["metadata"])
			}
			if k.gvr.Group != "apiregistration.k8s.io" { // client-go's scheme lacks it
				readProtobuf(t, k, ns, name)
			}

			_, err = res.Create(ctx, object(t, k, "invalid-"+k.gvr.Resource, k.invalid), metav1.CreateOptions{})
			var status apierrors.APIStatus
			if !apierrors.IsInvalid(err) || !asStatus(err, &status) {
				t.Fatalf("create invalid: got %v, want 422 Invalid", err)
			}
			var got []string
			for _, c := range status.Status().Details.Causes {
				got = append(got, c.Field)
			}
			for _, f := range k.fields {
				if !slices.Contains(got, f) {
					t.Errorf("422 names %v, want %s among them (%v)", got, f, err)
				}
			}
		})
	}
}

// TestStartupObjectsAsUpstream checks the objects kube-apiserver makes at
// start: the system priority classes, whose value is immutable, and API
// priority and fairness' mandatory and suggested configuration.
func TestStartupObjectsAsUpstream(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	pc, err := cs.SchedulingV1().PriorityClasses().Get(ctx, "system-node-critical", metav1.GetOptions{})
	if err != nil || pc.Value != 2000001000 {
		t.Fatalf("system-node-critical: %v %+v", err, pc)
	}
	if pc, err := cs.SchedulingV1().PriorityClasses().Get(ctx, "system-cluster-critical", metav1.GetOptions{}); err != nil || pc.Value != 2000000000 {
		t.Fatalf("system-cluster-critical: %v %+v", err, pc)
	}
	pc.Value = 5
	if _, err := cs.SchedulingV1().PriorityClasses().Update(ctx, pc, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "value: Forbidden: may not be changed in an update.") {
		t.Errorf("update of the value: %v, want 422 value: Forbidden", err)
	}
	fs, err := cs.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fs.Items {
		names = append(names, f.Name)
	}
	for _, want := range []string{"exempt", "catch-all", "system-nodes", "probes", "global-default", "service-accounts"} {
		if !slices.Contains(names, want) {
			t.Errorf("flow schemas %v lack %s", names, want)
		}
	}
	// Kite's own group versions are local APIServices, available.
	dc := dynamic.NewForConfigOrDie(config(t))
	apiservices := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	for _, name := range []string{"v1.", "v1.apps", "v1.networking.k8s.io", "v1.apiextensions.k8s.io"} {
		svc, err := dc.Resource(apiservices).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("apiservice %s: %v", name, err)
			continue
		}
		conds, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
		if len(conds) != 1 || conds[0].(map[string]any)["status"] != "True" || conds[0].(map[string]any)["reason"] != "Local" {
			t.Errorf("apiservice %s conditions %v, want Available True (Local)", name, conds)
		}
	}
	pl, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, "catch-all", metav1.GetOptions{})
	if err != nil || pl.Spec.Limited == nil || *pl.Spec.Limited.NominalConcurrencyShares != 5 {
		t.Fatalf("catch-all: %v %+v", err, pl)
	}
	// The mandatory objects' specs are fixed.
	*pl.Spec.Limited.NominalConcurrencyShares = 100
	if _, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Update(ctx, pl, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec of 'catch-all' must equal the fixed value") {
		t.Errorf("update of catch-all: %v, want 422", err)
	}
}

func object(t *testing.T, k newKind, name, body string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(body), &u.Object); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	gv := schema.GroupVersion{Group: k.gvr.Group, Version: k.gvr.Version}
	if kindOfResource(k.gvr.Resource) == "" {
		t.Fatalf("no kind for %s", k.gvr)
	}
	u.SetAPIVersion(gv.String())
	u.SetKind(kindOfResource(k.gvr.Resource))
	u.SetName(name)
	return u
}

// kindOfResource maps the table's resources to their kinds.
func kindOfResource(resource string) string {
	return map[string]string{
		"limitranges": "LimitRange", "resourcequotas": "ResourceQuota", "ingressclasses": "IngressClass", "ingresses": "Ingress",
		"networkpolicies": "NetworkPolicy", "runtimeclasses": "RuntimeClass", "priorityclasses": "PriorityClass",
		"csidrivers": "CSIDriver", "csinodes": "CSINode", "csistoragecapacities": "CSIStorageCapacity",
		"volumeattachments": "VolumeAttachment", "volumeattributesclasses": "VolumeAttributesClass",
		"clustertrustbundles": "ClusterTrustBundle", "podcertificaterequests": "PodCertificateRequest", "certificatesigningrequests": "CertificateSigningRequest",
		"deviceclasses": "DeviceClass", "devicetaintrules": "DeviceTaintRule", "resourceclaims": "ResourceClaim",
		"resourceclaimtemplates": "ResourceClaimTemplate", "resourceslices": "ResourceSlice", "flowschemas": "FlowSchema",
		"prioritylevelconfigurations": "PriorityLevelConfiguration", "apiservices": "APIService", "storageversionmigrations": "StorageVersionMigration",
	}[resource]
}

// readProtobuf reads the object back as protobuf and decodes it into its
// Go type.
func readProtobuf(t *testing.T, k newKind, ns, name string) {
	t.Helper()
	cfg := rest.CopyConfig(config(t))
	cfg.GroupVersion = &schema.GroupVersion{Group: k.gvr.Group, Version: k.gvr.Version}
	cfg.APIPath = "/apis"
	if k.gvr.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := rc.Get().Resource(k.gvr.Resource).Name(name)
	if k.namespaced {
		req = req.Namespace(ns)
	}
	obj, err := req.Do(t.Context()).Get()
	if err != nil {
		t.Fatalf("get as protobuf: %v", err)
	}
	if m, ok := obj.(metav1.Object); !ok || m.GetName() != name {
		t.Errorf("protobuf read gave %T %v", obj, obj)
	}
}

func asStatus(err error, into *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	*into = s
	return ok && s.Status().Details != nil
}

func newNamespace(t *testing.T) string {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(config(t))
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "coverage-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

// testCA is a self-signed CA certificate, PEM-encoded.
func testCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// testCSR is a PKCS#10 request, base64 as JSON carries bytes: DER, or
// PEM-encoded (a CertificateSigningRequest's spec.request) when pemEncoded.
func testCSR(t *testing.T, pemEncoded bool) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	if pemEncoded {
		der = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	return base64.StdEncoding.EncodeToString(der)
}

// quote makes s a flow-style YAML scalar (JSON's quoting is YAML's).
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
