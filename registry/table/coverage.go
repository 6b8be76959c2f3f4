package table

import (
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// The printers of the kinds of issue 26, as upstream's
// (k8s.io/kubernetes/pkg/printers/internalversion): columns as data, one
// row function each. The server prints wide, as upstream's does; kubectl
// hides the columns of priority 1.

func registerCoverage(c *Convertor) {
	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
		{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
		ageColumn,
	}, func(q *corev1.ResourceQuota, now time.Time) []any {
		var req, lim []string
		for _, name := range slices.Sorted(func(yield func(corev1.ResourceName) bool) {
			for k := range q.Status.Hard {
				if !yield(k) {
					return
				}
			}
		}) {
			used, hard := q.Status.Used[name], q.Status.Hard[name]
			cell := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
			if first, _, ok := strings.Cut(string(name), "."); ok && first == "limits" {
				lim = append(lim, cell)
			} else {
				req = append(req, cell)
			}
		}
		return []any{q.Name, strings.Join(req, ", "), strings.Join(lim, ", "), age(q.CreationTimestamp, now)}
	}), &corev1.ResourceQuota{}, &corev1.ResourceQuotaList{})

	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Class", Type: "string", Description: "The name of the IngressClass resource that should be used for additional configuration"},
		{Name: "Hosts", Type: "string", Description: "Hosts that incoming requests are matched against before the ingress rule"},
		{Name: "Address", Type: "string", Description: "Address is a list containing ingress points for the load-balancer"},
		{Name: "Ports", Type: "string", Description: "Ports of TLS configurations that open"},
		ageColumn,
	}, func(ing *networkingv1.Ingress, now time.Time) []any {
		class := "<none>"
		if ing.Spec.IngressClassName != nil {
			class = *ing.Spec.IngressClassName
		}
		var hosts []string
		for _, r := range ing.Spec.Rules {
			if r.Host != "" && len(hosts) < 3 {
				hosts = append(hosts, r.Host)
			}
		}
		hostCell := strings.Join(hosts, ",")
		switch {
		case len(hosts) == 0:
			hostCell = "*"
		case len(ing.Spec.Rules) > 3:
			hostCell = fmt.Sprintf("%s + %d more...", hostCell, len(ing.Spec.Rules)-3)
		}
		var addrs []string
		for _, in := range ing.Status.LoadBalancer.Ingress {
			a := in.IP
			if a == "" {
				a = in.Hostname
			}
			if a != "" && !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
		}
		slices.Sort(addrs)
		ports := "80"
		if len(ing.Spec.TLS) != 0 {
			ports = "80, 443"
		}
		return []any{ing.Name, class, hostCell, strings.Join(addrs, ","), ports, age(ing.CreationTimestamp, now)}
	}), &networkingv1.Ingress{}, &networkingv1.IngressList{})

	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Controller", Type: "string", Description: "Controller that is responsible for handling this class"},
		{Name: "Parameters", Type: "string", Description: "A reference to a resource with additional parameters"},
		ageColumn,
	}, func(ic *networkingv1.IngressClass, now time.Time) []any {
		name := ic.Name
		if ic.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true" {
			name += " (default)"
		}
		params := "<none>"
		if p := ic.Spec.Parameters; p != nil {
			params = p.Kind
			if p.APIGroup != nil {
				params += "." + *p.APIGroup
			}
			params += "/" + p.Name
		}
		return []any{name, ic.Spec.Controller, params, age(ic.CreationTimestamp, now)}
	}), &networkingv1.IngressClass{}, &networkingv1.IngressClassList{})

	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Pod-Selector", Type: "string", Description: networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]},
		ageColumn,
	}, func(np *networkingv1.NetworkPolicy, now time.Time) []any {
		return []any{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), age(np.CreationTimestamp, now)}
	}), &networkingv1.NetworkPolicy{}, &networkingv1.NetworkPolicyList{})

	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Handler", Type: "string", Description: objectMetaDoc["handler"]},
		ageColumn,
	}, func(rc *nodev1.RuntimeClass, now time.Time) []any {
		return []any{rc.Name, rc.Handler, age(rc.CreationTimestamp, now)}
	}), &nodev1.RuntimeClass{}, &nodev1.RuntimeClassList{})

	pcDoc := schedulingv1.PriorityClass{}.SwaggerDoc()
	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Value", Type: "integer", Description: pcDoc["value"]},
		{Name: "Global-Default", Type: "boolean", Description: pcDoc["globalDefault"]},
		ageColumn,
		{Name: "PreemptionPolicy", Type: "string", Description: pcDoc["preemptionPolicy"]},
	}, func(pc *schedulingv1.PriorityClass, now time.Time) []any {
		policy := ""
		if pc.PreemptionPolicy != nil {
			policy = string(*pc.PreemptionPolicy)
		}
		return []any{pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp, now), policy}
	}), &schedulingv1.PriorityClass{}, &schedulingv1.PriorityClassList{})

	registerCoverageStorage(c)
	registerCoverageOthers(c)
}

func registerCoverageStorage(c *Convertor) {
	csiDoc := storagev1.CSIDriverSpec{}.SwaggerDoc()
	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "AttachRequired", Type: "boolean", Description: csiDoc["attachRequired"]},
		{Name: "PodInfoOnMount", Type: "boolean", Description: csiDoc["podInfoOnMount"]},
		{Name: "StorageCapacity", Type: "boolean", Description: csiDoc["storageCapacity"]},
		{Name: "TokenRequests", Type: "string", Description: csiDoc["tokenRequests"]},
		{Name: "RequiresRepublish", Type: "boolean", Description: csiDoc["requiresRepublish"]},
		{Name: "Modes", Type: "string", Description: csiDoc["volumeLifecycleModes"]},
		ageColumn,
	}, func(d *storagev1.CSIDriver, now time.Time) []any {
		modes := "<none>"
		if len(d.Spec.VolumeLifecycleModes) > 0 {
			var m []string
			for _, mode := range d.Spec.VolumeLifecycleModes {
				m = append(m, string(mode))
			}
			modes = strings.Join(m, ",")
		}
		tokens := "<unset>"
		if d.Spec.TokenRequests != nil {
			var a []string
			for _, tr := range d.Spec.TokenRequests {
				a = append(a, tr.Audience)
			}
			tokens = strings.Join(a, ",")
		}
		return []any{d.Name, boolOr(d.Spec.AttachRequired, true), boolOr(d.Spec.PodInfoOnMount, false), boolOr(d.Spec.StorageCapacity, false),
			tokens, boolOr(d.Spec.RequiresRepublish, false), modes, age(d.CreationTimestamp, now)}
	}), &storagev1.CSIDriver{}, &storagev1.CSIDriverList{})

	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Drivers", Type: "integer", Description: "Drivers indicates the number of CSI drivers registered on the node"},
		ageColumn,
	}, func(n *storagev1.CSINode, now time.Time) []any {
		return []any{n.Name, int64(len(n.Spec.Drivers)), age(n.CreationTimestamp, now)}
	}), &storagev1.CSINode{}, &storagev1.CSINodeList{})

	capDoc := storagev1.CSIStorageCapacity{}.SwaggerDoc()
	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "StorageClassName", Type: "string", Description: capDoc["storageClassName"]},
		{Name: "Capacity", Type: "string", Description: capDoc["capacity"]},
	}, func(sc *storagev1.CSIStorageCapacity, _ time.Time) []any {
		capacity := "<unset>"
		if sc.Capacity != nil {
			capacity = sc.Capacity.String()
		}
		return []any{sc.Name, sc.StorageClassName, capacity}
	}), &storagev1.CSIStorageCapacity{}, &storagev1.CSIStorageCapacityList{})

	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
		{Name: "PV", Type: "string", Description: storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]},
		{Name: "Node", Type: "string", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
		ageColumn,
	}, func(va *storagev1.VolumeAttachment, now time.Time) []any {
		pv := ""
		if va.Spec.Source.PersistentVolumeName != nil {
			pv = *va.Spec.Source.PersistentVolumeName
		}
		return []any{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, age(va.CreationTimestamp, now)}
	}), &storagev1.VolumeAttachment{}, &storagev1.VolumeAttachmentList{})

	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "DriverName", Type: "string", Description: storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]},
		ageColumn,
	}, func(vac *storagev1.VolumeAttributesClass, now time.Time) []any {
		return []any{vac.Name, vac.DriverName, age(vac.CreationTimestamp, now)}
	}), &storagev1.VolumeAttributesClass{}, &storagev1.VolumeAttributesClassList{})
}

func registerCoverageOthers(c *Convertor) {
	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
		{Name: "Available", Type: "string", Description: "Whether this service is available."},
		ageColumn,
	}, func(svc *apiregistrationv1.APIService, now time.Time) []any {
		service := "Local"
		if svc.Spec.Service != nil {
			service = svc.Spec.Service.Namespace + "/" + svc.Spec.Service.Name
		}
		status := string(apiregistrationv1.ConditionUnknown)
		for _, c := range svc.Status.Conditions {
			if c.Type != apiregistrationv1.Available {
				continue
			}
			status = string(c.Status)
			if c.Status != apiregistrationv1.ConditionTrue && c.Reason != "" {
				status = fmt.Sprintf("%s (%s)", c.Status, c.Reason)
			}
			break
		}
		return []any{svc.Name, service, status, age(svc.CreationTimestamp, now)}
	}), &apiregistrationv1.APIService{}, &apiregistrationv1.APIServiceList{})

	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "SignerName", Type: "string", Description: certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"]},
	}, func(b *certificatesv1.ClusterTrustBundle, _ time.Time) []any {
		return []any{b.Name, b.Spec.SignerName}
	}), &certificatesv1.ClusterTrustBundle{}, &certificatesv1.ClusterTrustBundleList{})

	pcrDoc := certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()
	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "PodName", Type: "string", Description: pcrDoc["podName"]},
		{Name: "ServiceAccountName", Type: "string", Description: pcrDoc["serviceAccountName"]},
		{Name: "NodeName", Type: "string", Description: pcrDoc["nodeName"]},
		{Name: "SignerName", Type: "string", Description: pcrDoc["signerName"]},
		{Name: "State", Type: "string", Description: "Is the request Pending, Issued, Denied, or Failed?"},
		{Name: "UnverifiedUserAnnotations", Type: "string", Description: pcrDoc["unverifiedUserAnnotations"]},
	}, func(r *certificatesv1.PodCertificateRequest, _ time.Time) []any {
		state := "Pending"
		for _, cond := range r.Status.Conditions {
			switch cond.Type {
			case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
				state = cond.Type
			}
		}
		return []any{r.Name, r.Spec.PodName, r.Spec.ServiceAccountName, string(r.Spec.NodeName), r.Spec.SignerName, state, labels.FormatLabels(r.Spec.UnverifiedUserAnnotations)}
	}), &certificatesv1.PodCertificateRequest{}, &certificatesv1.PodCertificateRequestList{})

	c.register(columns([]metav1.TableColumnDefinition{nameColumn, ageColumn}, func(d *resourcev1.DeviceClass, now time.Time) []any {
		return []any{d.Name, age(d.CreationTimestamp, now)}
	}), &resourcev1.DeviceClass{}, &resourcev1.DeviceClassList{})
	c.register(columns([]metav1.TableColumnDefinition{nameColumn, ageColumn}, func(t *resourcev1.ResourceClaimTemplate, now time.Time) []any {
		return []any{t.Name, age(t.CreationTimestamp, now)}
	}), &resourcev1.ResourceClaimTemplate{}, &resourcev1.ResourceClaimTemplateList{})
	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "State", Type: "string", Description: "A summary of the current state (allocated, pending, reserved, etc.)."},
		ageColumn,
	}, func(rc *resourcev1.ResourceClaim, now time.Time) []any {
		var states []string
		if rc.DeletionTimestamp != nil {
			states = append(states, "deleted")
		}
		if rc.Status.Allocation == nil {
			if rc.DeletionTimestamp == nil {
				states = append(states, "pending")
			}
		} else {
			states = append(states, "allocated")
			if len(rc.Status.ReservedFor) > 0 {
				states = append(states, "reserved")
			}
		}
		return []any{rc.Name, strings.Join(states, ","), age(rc.CreationTimestamp, now)}
	}), &resourcev1.ResourceClaim{}, &resourcev1.ResourceClaimList{})

	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "PriorityLevel", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]},
		{Name: "MatchingPrecedence", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]},
		{Name: "DistinguisherMethod", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]},
		ageColumn,
		{Name: "MissingPL", Type: "string", Description: "references a broken or non-existent PriorityLevelConfiguration"},
	}, func(fs *flowcontrolv1.FlowSchema, now time.Time) []any {
		dm := "<none>"
		if fs.Spec.DistinguisherMethod != nil {
			dm = string(fs.Spec.DistinguisherMethod.Type)
		}
		missing := "?"
		for _, cond := range fs.Status.Conditions {
			if cond.Type == flowcontrolv1.FlowSchemaConditionDangling {
				missing = string(cond.Status)
				break
			}
		}
		return []any{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), dm, age(fs.CreationTimestamp, now), missing}
	}), &flowcontrolv1.FlowSchema{}, &flowcontrolv1.FlowSchemaList{})

	qDoc := flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()
	c.register(columns([]metav1.TableColumnDefinition{nameColumn,
		{Name: "Type", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]},
		{Name: "NominalConcurrencyShares", Type: "string", Description: flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]},
		{Name: "Queues", Type: "string", Description: qDoc["queues"]},
		{Name: "HandSize", Type: "string", Description: qDoc["handSize"]},
		{Name: "QueueLengthLimit", Type: "string", Description: qDoc["queueLengthLimit"]},
		ageColumn,
	}, func(pl *flowcontrolv1.PriorityLevelConfiguration, now time.Time) []any {
		var ncs, queues, hand, qlen any = "<none>", "<none>", "<none>", "<none>"
		if l := pl.Spec.Limited; l != nil {
			if l.NominalConcurrencyShares != nil {
				ncs = int64(*l.NominalConcurrencyShares)
			}
			if q := l.LimitResponse.Queuing; q != nil {
				queues, hand, qlen = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
			}
		}
		return []any{pl.Name, string(pl.Spec.Type), ncs, queues, hand, qlen, age(pl.CreationTimestamp, now)}
	}), &flowcontrolv1.PriorityLevelConfiguration{}, &flowcontrolv1.PriorityLevelConfigurationList{})

	c.register(columns([]metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Description: objectMetaDoc["name"]},
		{Name: "Resource", Type: "string", Description: "GroupResource to migrate"},
		{Name: "Status", Type: "string", Description: "Status of the migration"},
	}, func(m *storagemigrationv1.StorageVersionMigration, _ time.Time) []any {
		status := "Unknown"
		for _, cond := range m.Status.Conditions {
			if cond.Status != metav1.ConditionTrue {
				continue
			}
			switch cond.Type {
			case string(storagemigrationv1.MigrationRunning), string(storagemigrationv1.MigrationFailed), string(storagemigrationv1.MigrationSucceeded):
				status = cond.Type
			}
		}
		return []any{m.Name, m.Spec.Resource.String(), status}
	}), &storagemigrationv1.StorageVersionMigration{}, &storagemigrationv1.StorageVersionMigrationList{})
}

// columns is a printer of defs whose cells row computes from one object
// of type T.
func columns[T runtime.Object](defs []metav1.TableColumnDefinition, row func(T, time.Time) []any) *printer {
	return &printer{columns: defs, row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		return row(obj.(T), now), nil
	}}
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}
