package apiextensions

import (
	"bytes"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"

	"github.com/kite-project/kite/registry/table"
)

var objectMetaDoc = metav1.ObjectMeta{}.SwaggerDoc()

// Columns returns the Table columns of a CRD version, as upstream's
// tableconvertor: Name, then the additionalPrinterColumns (an Age column
// when there are none), each cell read by its JSONPath; integers and
// numbers coerced, dates shown as ages ("<invalid>" when unparsable),
// missing values null.
func Columns(crd *apiextensionsv1.CustomResourceDefinition, version string) (*table.Columns, error) {
	var printer []apiextensionsv1.CustomResourceColumnDefinition
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			printer = v.AdditionalPrinterColumns
		}
	}
	if len(printer) == 0 {
		printer = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: objectMetaDoc["creationTimestamp"]}}
	}
	cols := &table.Columns{Definitions: []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]}}}
	paths := make([]*jsonpath.JSONPath, len(printer))
	for i, col := range printer {
		cols.Definitions = append(cols.Definitions, metav1.TableColumnDefinition{Name: col.Name, Type: col.Type, Format: col.Format, Description: col.Description, Priority: col.Priority})
		p := jsonpath.New(col.Name)
		if err := p.Parse(fmt.Sprintf("{%s}", col.JSONPath)); err != nil {
			return nil, fmt.Errorf("CRD %s column %q: JSONPath %q: %w", crd.Name, col.Name, col.JSONPath, err)
		}
		p.AllowMissingKeys(true)
		paths[i] = p
	}
	cols.Cells = func(obj runtime.Object, now time.Time) []any {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return make([]any, len(cols.Definitions))
		}
		cells := []any{u.GetName()}
		for i, p := range paths {
			results, err := p.FindResults(u.Object)
			if err != nil || len(results) == 0 || len(results[0]) == 0 {
				cells = append(cells, nil)
				continue
			}
			value := results[0][0].Interface()
			if printer[i].Type == "string" {
				var buf bytes.Buffer
				fmt.Fprint(&buf, value)
				cells = append(cells, buf.String())
				continue
			}
			cells = append(cells, cell(printer[i].Type, value, now))
		}
		return cells
	}
	return cols, nil
}

// cell is upstream's cellForJSONValue.
func cell(typ string, value any, now time.Time) any {
	if value == nil {
		return nil
	}
	switch typ {
	case "integer":
		switch v := value.(type) {
		case float64:
			return int64(v)
		case int64:
			return v
		}
	case "number":
		switch v := value.(type) {
		case float64:
			return v
		case int64:
			return float64(v)
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "date":
		if s, ok := value.(string); ok {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return "<invalid>"
			}
			return duration.HumanDuration(now.Sub(t))
		}
	}
	return nil
}
