package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kite-project/kite/registry"
)

// MaxJSONPatchOperations is upstream's limit on the operations of one JSON
// patch; a longer one gets 413.
const MaxJSONPatchOperations = 10000

// JSONPatchMaxCopyBytes is upstream's limit on what the copy operations of
// one JSON patch may add to the document (3 MiB): each copy may double it,
// so a small patch could otherwise take the server's memory. Past it the
// patch fails with 422 and changes nothing.
const JSONPatchMaxCopyBytes = 3 << 20

// jsonPatchOptions are the options of every JSON patch, passed with each
// apply rather than set in json-patch's package variables as upstream
// does (v4 has nothing else): a library must not change what other code
// of the process gets from json-patch. The rest are v4's defaults, which
// upstream's JSON patches get: negative indices count from the end, a
// remove of a missing path fails, an add does not create parents.
func jsonPatchOptions() *jsonpatchv5.ApplyOptions {
	return &jsonpatchv5.ApplyOptions{
		SupportNegativeIndices:   true,
		AccumulatedCopySizeLimit: JSONPatchMaxCopyBytes,
		EscapeHTML:               true,
	}
}

// patch applies a JSON patch, JSON merge patch, strategic merge patch or
// server-side apply to the stored object. The patch is re-applied to the
// newest object when the write races with another writer, as upstream
// does, so concurrent patches of different fields all land.
func (s *Server) patch(c *call) error {
	var opts metav1.PatchOptions
	if err := decodeParams(c.r, &opts); err != nil {
		return err
	}
	if err := validateWriteOptions("PatchOptions", opts.DryRun, opts.FieldValidation); err != nil {
		return err
	}
	mediaType, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	patchType := types.PatchType(mediaType)
	if err != nil {
		patchType = ""
	}
	if accepted := c.strategy().PatchTypes(); !slices.Contains(accepted, string(patchType)) {
		return unsupportedMediaType(c.r.Header.Get("Content-Type"), accepted)
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	if patchType == types.ApplyYAMLPatchType {
		if opts.FieldManager == "" {
			return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "",
				field.ErrorList{field.Required(field.NewPath("fieldManager"), "is required for apply patch")})
		}
	} else {
		if opts.Force != nil {
			return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "",
				field.ErrorList{field.Forbidden(field.NewPath("force"), "may not be specified for non-apply patch")})
		}
		if opts.FieldManager == "" {
			opts.FieldManager = managerFromUserAgent(c.r)
		}
	}
	req := &registry.UpdateRequest{
		Namespace:   c.info.Namespace,
		Name:        c.info.Name,
		Subresource: c.info.Subresource,
		Options:     metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation},
	}
	if patchType == types.ApplyYAMLPatchType {
		if err := s.applyRequest(c, req, body, opts.Force != nil && *opts.Force); err != nil {
			return err
		}
	} else {
		req.Object = func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
			return s.applyPatch(c, existing, patchType, body, opts.FieldValidation)
		}
	}
	out, created, err := c.store.Update(c.ctx(), req)
	if err != nil {
		return err
	}
	return s.updated(c, out, created)
}

// applyPatch applies a non-apply patch to existing and decodes the result.
func (s *Server) applyPatch(c *call, existing runtime.Object, patchType types.PatchType, patch []byte, fieldValidation string) (runtime.Object, error) {
	if existing == nil {
		return nil, apierrors.NewNotFound(c.strategy().GroupResource(), c.info.Name)
	}
	if c.sub != nil && c.sub.View != nil && c.sub.New != nil {
		// The registry hands a view subresource's patch the view (a
		// Scale), not the object.
		return s.applyPatchAs(c, existing, c.sub.New, c.sub.Kind, patchType, patch, fieldValidation)
	}
	return s.applyPatchAs(c, existing, c.strategy().New, c.strategy().Kind, patchType, patch, fieldValidation)
}

// applyPatchAs patches existing, an object of the given kind (the
// resource's, or a subresource's view of it).
func (s *Server) applyPatchAs(c *call, existing runtime.Object, newObj func() runtime.Object, kind schema.GroupVersionKind, patchType types.PatchType, patch []byte, fieldValidation string) (runtime.Object, error) {
	current, err := json.Marshal(existing)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var patched []byte
	switch patchType {
	case types.JSONPatchType:
		p, err := jsonpatchv5.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(p) > MaxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", MaxJSONPatchOperations, len(p)))
		}
		// Copies are bounded by JSONPatchMaxCopyBytes (jsonPatchOptions).
		if patched, err = p.ApplyWithOptions(current, jsonPatchOptions()); err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	case types.MergePatchType:
		if patched, err = jsonpatch.MergePatch(current, patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	case types.StrategicMergePatchType:
		if patched, err = strategicpatch.StrategicMergePatch(current, patch, newObj()); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}
	info, _ := s.serializerFor(mediaJSON)
	dec := info.StrictSerializer
	if fieldValidation == metav1.FieldValidationIgnore {
		dec = info.Serializer
	}
	obj, _, err := dec.Decode(patched, &kind, newObj())
	if err != nil {
		strictErr, isStrict := runtime.AsStrictDecodingError(err)
		switch {
		case !isStrict || obj == nil || fieldValidation == metav1.FieldValidationStrict:
			return nil, apierrors.NewBadRequest(err.Error())
		default:
			c.warnings = c.warnings[:0]
			for _, e := range strictErr.Errors() {
				c.warnings = append(c.warnings, e.Error())
			}
		}
	}
	return obj, nil
}

// applyRequest fills req for server-side apply: the applied configuration
// is merged into the live object by the field manager, which also detects
// conflicts with other managers (409 unless force).
func (s *Server) applyRequest(c *call, req *registry.UpdateRequest, body []byte, force bool) error {
	fm := c.store.FieldManager(c.info.Subresource)
	if fm == nil {
		return apierrors.NewBadRequest(fmt.Sprintf("server-side apply is not supported for %s", c.strategy().Resource))
	}
	applied := &unstructured.Unstructured{}
	// Integers stay integers, as upstream's (kubernetes#95836): a custom
	// resource's scale replicas must be int64 to validate.
	if err := yaml.Unmarshal(body, &applied.Object); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	if applied.Object == nil {
		return apierrors.NewBadRequest("the applied configuration is empty")
	}
	kind := c.strategy().Kind
	if gvk := applied.GroupVersionKind(); gvk != kind && c.info.Subresource == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("the applied configuration is a %s, not a %s", gvk, kind))
	}
	if err := urlNameMismatch(c.info, applied.GetNamespace(), applied.GetName()); err != nil {
		return err
	}
	manager := req.Options.FieldManager
	req.Applied = true
	req.ForceAllowCreate = c.info.Subresource == ""
	strictWarnings, strictErr := strictApplyDecoding(body, req.Options.FieldValidation)
	req.Object = func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
		live := existing
		if live == nil {
			live = c.strategy().New()
		}
		out, err := fm.Apply(live, applied.DeepCopy(), manager, force)
		var status apierrors.APIStatus
		if err != nil && !errors.As(err, &status) && strings.HasPrefix(err.Error(), "failed to create typed patch object") {
			// The applied configuration does not fit the kind's schema
			// (a field it lacks, a number for a string): the client's
			// error. Upstream answers 500 (kubernetes#139253); its fix
			// (#139255) makes it this 400, message unchanged.
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if err != nil {
			return out, err
		}
		// As upstream's applyPatcher: the apply's own errors first,
		// then the strict decoding's.
		if strictErr != nil {
			return nil, strictErr
		}
		// Once, though a conflict runs this again; the call's other
		// warnings (a deprecated version's) stay.
		c.warnings = append(c.warnings, strictWarnings...)
		strictWarnings = nil
		return out, nil
	}
	return nil
}

// strictApplyDecoding decodes an applied configuration strictly, as
// upstream's applyPatcher does when fieldValidation is Strict or Warn
// (the default): the field manager's decoding keeps the last of a
// duplicated key, which strict decoding reports (`line 9: key "foo"
// already set in map`). Unknown fields are the field manager's to find,
// against the kind's schema. It returns the 400 for Strict, or the
// warnings for Warn.
func strictApplyDecoding(body []byte, fieldValidation string) (warnings []string, err error) {
	if fieldValidation == metav1.FieldValidationIgnore {
		return nil, nil
	}
	decodeErr := sigsyaml.UnmarshalStrict(body, &map[string]any{})
	switch {
	case decodeErr == nil:
		return nil, nil
	case fieldValidation == metav1.FieldValidationStrict:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", decodeErr))
	default:
		return yamlWarnings(decodeErr.Error()), nil
	}
}

// yamlWarnings splits a YAML decoding error into a warning per problem,
// one per line after its heading, as upstream's parseYAMLWarnings does:
// a Warning header carries one line.
func yamlWarnings(msg string) []string {
	for _, prefix := range []string{"yaml: unmarshal errors:\n", "error converting YAML to JSON: yaml: unmarshal errors:\n"} {
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			lines := strings.Split(rest, "\n")
			for i, l := range lines {
				lines[i] = strings.TrimSpace(l)
			}
			return lines
		}
	}
	return []string{msg}
}
