package openapi

//go:generate go run gen_markers.go

// markers are the comment markers openapi-gen reads on a field.
type markers struct {
	listType    string   // atomic, set or map
	listMapKeys []string // keys of a map list
	mapType     string   // atomic or granular
	optional    bool     // +optional on a field without omitempty
	required    bool     // +required on a field with omitempty
}
