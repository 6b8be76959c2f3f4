package workload

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// page is what the list checks need of one list response.
type page struct {
	names []string // the items' names, in order
	cont  string
	rv    string // the list's resourceVersion
	size  int    // bytes of the body as received (after any gzip)
}

// podLister lists pods of a namespace ("" = all).
type podLister interface {
	list(ctx context.Context, namespace string, lo metav1.ListOptions) (page, error)
}

// newPodLister is the lister of decode mode d.
func newPodLister(client kubernetes.Interface, d Decode) podLister {
	if d == ClientGoDecode {
		return typedLister{client}
	}
	return rawLister{rest: client.CoreV1().RESTClient(), resource: "pods", protobuf: true, bodies: &sync.Pool{}}
}

// typedLister lists with client-go's typed client, every pod decoded.
type typedLister struct{ client kubernetes.Interface }

func (l typedLister) list(ctx context.Context, namespace string, lo metav1.ListOptions) (page, error) {
	list, err := l.client.CoreV1().Pods(namespace).List(ctx, lo)
	if err != nil {
		return page{}, err
	}
	p := page{names: make([]string, len(list.Items)), cont: list.Continue}
	for i := range list.Items {
		p.names[i] = list.Items[i].Name
	}
	return p, nil
}

// rawLister sends the typed client's list request and reads of the body
// only the items' names and the continue token (RawDecode).
type rawLister struct {
	rest     rest.Interface // a REST client of the resource's group version
	resource string         // its plural, e.g. "pods"
	// protobuf: ask for protobuf when the config sets no content type, as
	// client-go's typed clients of built-in resources do.
	protobuf bool
	// bodies recycles the buffers that list bodies are read into: reading
	// 20 MB into a new, growing slice (as io.ReadAll does) costs the
	// client more CPU, zeroing and copying, than scanning it, on the cores
	// the server under test shares.
	bodies *sync.Pool // of *bytes.Buffer
}

func (l rawLister) list(ctx context.Context, namespace string, lo metav1.ListOptions) (page, error) {
	// UseProtobufAsDefault as client-go's typed pods client does, so that
	// the Accept header is the one its List sends.
	body, err := l.rest.Get().UseProtobufAsDefaultIfPreferred(l.protobuf).Namespace(namespace).Resource(l.resource).
		SpecificallyVersionedParams(&lo, scheme.ParameterCodec, listOptionsVersion).Stream(ctx)
	if err != nil {
		return page{}, err
	}
	defer body.Close()
	buf, _ := l.bodies.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer l.bodies.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(body); err != nil {
		return page{}, fmt.Errorf("read list body: %w", err)
	}
	// parseList copies what it keeps (names, continue token) out of buf.
	p, err := parseList(buf.Bytes())
	p.size = buf.Len()
	return p, err
}

// parseList reads a PodList body, JSON or protobuf (told apart by the
// protobuf magic).
func parseList(b []byte) (page, error) {
	if bytes.HasPrefix(b, protobufMagic) {
		return parseProtobufList(b[len(protobufMagic):])
	}
	return parseJSONList(b)
}

// parseJSONList walks a JSON list: metadata.continue and resourceVersion,
// and each item's metadata.name; everything else is skipped, not decoded.
func parseJSONList(b []byte) (page, error) {
	var p page
	s := &jsonScan{b: b}
	err := s.object(func(key []byte, escaped bool) (bool, error) {
		switch {
		case keyIs(key, escaped, "metadata"):
			return false, s.object(func(key []byte, escaped bool) (bool, error) {
				var err error
				switch {
				case keyIs(key, escaped, "continue"):
					p.cont, err = s.stringValue()
				case keyIs(key, escaped, "resourceVersion"):
					p.rv, err = s.stringValue()
				default:
					err = s.skip()
				}
				return false, err
			})
		case keyIs(key, escaped, "items"):
			if s.null() {
				return false, nil
			}
			return false, s.array(func() error {
				name := ""
				err := s.object(func(key []byte, escaped bool) (bool, error) {
					if !keyIs(key, escaped, "metadata") {
						return false, s.skip()
					}
					return false, s.object(func(key []byte, escaped bool) (bool, error) {
						if !keyIs(key, escaped, "name") {
							return false, s.skip()
						}
						v, err := s.stringValue()
						name = v
						return false, err
					})
				})
				if err == nil && name == "" {
					err = s.errorf("list item without a name")
				}
				p.names = append(p.names, name)
				return err
			})
		}
		return false, s.skip()
	})
	if err != nil {
		return page{}, fmt.Errorf("JSON list: %w", err)
	}
	return p, nil
}

// Fields of the protobuf messages of a list.
const (
	listMetadata = 1 // PodList.metadata
	listItems    = 2 // PodList.items
	listRV       = 2 // ListMeta.resourceVersion
	listContinue = 3 // ListMeta.continue
	metaName     = 1 // ObjectMeta.name
)

// parseProtobufList walks a protobuf PodList (after the magic: a
// runtime.Unknown whose raw is the list) down to each item's name and the
// continue token.
func parseProtobufList(b []byte) (page, error) {
	var list []byte
	err := protoFields(b, func(num protowire.Number, v []byte) error {
		if num == unknownRaw {
			list = v
		}
		return nil
	})
	if err != nil {
		return page{}, fmt.Errorf("protobuf list: %w", err)
	}
	var p page
	err = protoFields(list, func(num protowire.Number, v []byte) error {
		switch num {
		case listMetadata:
			return protoFields(v, func(num protowire.Number, v []byte) error {
				switch num {
				case listContinue:
					p.cont = string(v)
				case listRV:
					p.rv = string(v)
				}
				return nil
			})
		case listItems:
			name := ""
			err := protoFields(v, func(num protowire.Number, v []byte) error {
				if num != podMetadata {
					return nil
				}
				return protoFields(v, func(num protowire.Number, v []byte) error {
					if num == metaName {
						name = string(v)
					}
					return nil
				})
			})
			if err == nil && name == "" {
				err = fmt.Errorf("%w: list item without a name", errMalformed)
			}
			p.names = append(p.names, name)
			return err
		}
		return nil
	})
	if err != nil {
		return page{}, fmt.Errorf("protobuf list: %w", err)
	}
	return p, nil
}

// listOptionsVersion is the version list options are encoded from into
// query parameters: client-go's scheme has them in core v1 only, and the
// parameters are the same for every group (as the dynamic client's).
var listOptionsVersion = v1.SchemeGroupVersion
