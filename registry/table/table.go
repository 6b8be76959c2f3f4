package table

import (
	"fmt"
	"mime"
	"net/url"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Options configure a Convertor.
type Options struct {
	// Typer sets apiVersion and kind on objects embedded with
	// includeObject=Object when they lack them (objects from storage
	// usually do). Typically the scheme the apiserver serves from.
	// Without it such objects are embedded as they are.
	Typer runtime.ObjectTyper
	// Now is the clock the Age columns count from; time.Now when nil.
	Now func() time.Time
}

// ConvertOptions are one request's table options.
type ConvertOptions struct {
	// IncludeObject says what each row's object is: None, Metadata (a
	// PartialObjectMetadata, the default) or Object (the whole object).
	IncludeObject metav1.IncludeObjectPolicy
	// NoHeaders leaves out the column definitions.
	NoHeaders bool
	// GroupVersion is the Table's group version: meta.k8s.io/v1 (the
	// default) or meta.k8s.io/v1beta1.
	GroupVersion schema.GroupVersion
	// Columns, if set, are the columns instead of the kind's printer's
	// (a custom resource's additionalPrinterColumns).
	Columns *Columns
}

// Columns are a resource's columns given from outside the Convertor.
type Columns struct {
	Definitions []metav1.TableColumnDefinition
	// Cells returns one item's cells, one per definition.
	Cells func(obj runtime.Object, now time.Time) []any
}

// Convertor makes Tables. It is immutable and safe for concurrent use.
type Convertor struct {
	typer    runtime.ObjectTyper
	now      func() time.Time
	printers map[reflect.Type]*printer
}

// printer is one kind's columns and its row function. row gets one item
// (never a list) and returns its cells.
type printer struct {
	columns []metav1.TableColumnDefinition
	row     func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition)
	// forList, if set, returns the printer for the items of one list:
	// a row that depends on the other items (the effective default
	// StorageClass).
	forList func(list runtime.Object) *printer
}

// New returns a Convertor with upstream's printers.
func New(opts Options) *Convertor {
	c := &Convertor{typer: opts.Typer, now: opts.Now, printers: map[reflect.Type]*printer{}}
	if c.now == nil {
		c.now = time.Now
	}
	registerCore(c)
	registerEvents(c)
	registerWorkloads(c)
	registerDisruption(c)
	registerAutoscaling(c)
	registerServiceNet(c)
	registerWorkloadStorage(c)
	registerCoverage(c)
	registerRBAC(c)
	registerCertificates(c)
	registerComponentStatus(c)
	return c
}

// register adds p for the item type and its list type.
func (c *Convertor) register(p *printer, item, list runtime.Object) {
	c.printers[reflect.TypeOf(item)] = p
	c.printers[reflect.TypeOf(list)] = p
}

var objectMetaDoc = metav1.ObjectMeta{}.SwaggerDoc()

// defaultPrinter is upstream's default table convertor: Name, Created At.
var defaultPrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]},
		{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
	},
	row: func(obj runtime.Object, _ time.Time) ([]any, []metav1.TableRowCondition) {
		m, _ := meta.Accessor(obj) // checked by the caller
		return []any{m.GetName(), m.GetCreationTimestamp().Time.UTC().Format(time.RFC3339)}, nil
	},
}

// Convert returns obj, an object or a list, as a Table: one row per
// object, and the list's resourceVersion, continue token and remaining
// item count. An object without metadata is refused with 406, as upstream
// refuses to tabulate what it cannot name.
func (c *Convertor) Convert(obj runtime.Object, opts ConvertOptions) (*metav1.Table, error) {
	gv := opts.GroupVersion
	if gv.Empty() {
		gv = metav1.SchemeGroupVersion
	}
	if gv != metav1.SchemeGroupVersion && gv != metav1beta1.SchemeGroupVersion {
		return nil, notAcceptable(fmt.Sprintf("no Table exists in group version %s", gv))
	}
	switch opts.IncludeObject {
	case "", metav1.IncludeMetadata, metav1.IncludeObject, metav1.IncludeNone:
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unrecognized includeObject value: %q", opts.IncludeObject))
	}
	p := c.printers[reflect.TypeOf(obj)]
	if cols := opts.Columns; cols != nil {
		p = &printer{columns: cols.Definitions, row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
			return cols.Cells(obj, now), nil
		}}
	}
	if p == nil {
		p = defaultPrinter
	}
	if p.forList != nil && meta.IsListType(obj) {
		p = p.forList(obj)
	}
	now := c.now()
	t := &metav1.Table{}
	t.SetGroupVersionKind(gv.WithKind("Table"))
	addRow := func(item runtime.Object) error {
		if _, err := meta.Accessor(item); err != nil {
			return notAcceptable(fmt.Sprintf("the object %T does not support being converted to a Table", item))
		}
		cells, conds := p.row(item, now)
		embedded, err := c.embed(item, opts.IncludeObject, gv)
		if err != nil {
			return err
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells, Conditions: conds, Object: runtime.RawExtension{Object: embedded}})
		return nil
	}
	if meta.IsListType(obj) {
		t.Rows = []metav1.TableRow{} // an empty list is "rows": [], as upstream
		if err := meta.EachListItem(obj, addRow); err != nil {
			return nil, err
		}
		if l, err := meta.ListAccessor(obj); err == nil {
			t.ResourceVersion = l.GetResourceVersion()
			t.Continue = l.GetContinue()
			t.RemainingItemCount = l.GetRemainingItemCount()
		}
	} else {
		if err := addRow(obj); err != nil {
			return nil, err
		}
		if m, err := meta.Accessor(obj); err == nil {
			t.ResourceVersion = m.GetResourceVersion()
		}
	}
	if !opts.NoHeaders {
		t.ColumnDefinitions = p.columns
	}
	return t, nil
}

// embed returns what a row carries for includeObject.
func (c *Convertor) embed(obj runtime.Object, include metav1.IncludeObjectPolicy, gv schema.GroupVersion) (runtime.Object, error) {
	switch include {
	case metav1.IncludeNone:
		return nil, nil
	case metav1.IncludeObject:
		if !obj.GetObjectKind().GroupVersionKind().Empty() || c.typer == nil {
			return obj, nil
		}
		gvks, _, err := c.typer.ObjectKinds(obj)
		if err != nil || len(gvks) == 0 {
			return obj, nil // embedded untyped rather than failing the listing
		}
		typed := obj.DeepCopyObject() // never modify the caller's (shared) object
		typed.GetObjectKind().SetGroupVersionKind(gvks[0])
		return typed, nil
	default: // Metadata, and the default
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		partial := meta.AsPartialObjectMetadata(m)
		partial.SetGroupVersionKind(gv.WithKind("PartialObjectMetadata"))
		return partial, nil
	}
}

// ParseQuery reads a request's table options (includeObject) from its
// query. A bad value is a 400, as upstream.
func ParseQuery(q url.Values) (ConvertOptions, error) {
	v := metav1.IncludeObjectPolicy(q.Get("includeObject"))
	switch v {
	case "", metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
		return ConvertOptions{IncludeObject: v}, nil
	}
	return ConvertOptions{}, apierrors.NewBadRequest(fmt.Sprintf("unrecognized includeObject value: %q", v))
}

// Requested reports whether an Accept header asks for a Table, and in
// which group version (the first acceptable entry wins, as in upstream's
// negotiation): "application/json;as=Table;v=v1;g=meta.k8s.io" or the
// same with v=v1beta1. kubectl sends a Table entry followed by plain
// application/json, so a server without tables still answers it.
func Requested(accept string) (schema.GroupVersion, bool) {
	for _, part := range strings.Split(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if params["as"] != "Table" || params["g"] != metav1.GroupName {
			continue
		}
		switch mediaType {
		case "application/json", "application/yaml", "application/vnd.kubernetes.protobuf":
		default:
			continue
		}
		switch v := params["v"]; v {
		case "v1", "v1beta1":
			return schema.GroupVersion{Group: metav1.GroupName, Version: v}, true
		}
	}
	return schema.GroupVersion{}, false
}

func notAcceptable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 406, Reason: metav1.StatusReasonNotAcceptable, Message: msg,
	}}
}

// age is upstream's translateTimestampSince.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func microAge(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
