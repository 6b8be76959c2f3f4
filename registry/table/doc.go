// Package table turns API objects into metav1.Table, the form kubectl get
// asks for with "Accept: application/json;as=Table;v=v1;g=meta.k8s.io".
//
// The columns (names, types, formats, descriptions and priorities) and
// the cells are upstream's, from kubernetes/kubernetes
// pkg/printers/internalversion/printers.go, for pods, nodes, namespaces,
// core and events.k8s.io events, leases, configmaps, secrets, services and
// serviceaccounts. Every other object gets upstream's default table (Name,
// Created At), as k8s.io/apiserver/pkg/registry/rest's default convertor
// gives. As on the real server, every row carries all cells, priority > 0
// ("-o wide") ones included; kubectl hides those unless asked.
//
// How the apiserver wires it, in the GET/LIST/WATCH response path:
//
//	conv := table.New(table.Options{Typer: scheme})          // once
//	gv, ok := table.Requested(r.Header.Get("Accept"))         // per request
//	if ok {
//		opts, err := table.ParseQuery(r.URL.Query())          // includeObject, 400 on a bad value
//		t, err := conv.Convert(obj, opts)                     // obj: an object or a list
//		t.SetGroupVersionKind(gv.WithKind("Table"))           // done by Convert; gv is v1 or v1beta1
//		// encode t as JSON (or protobuf); Content-Type
//		// application/json;as=Table;v=v1;g=meta.k8s.io
//	}
//
// For a watch, convert each event's object with NoHeaders after the first,
// as upstream does. Objects passed in are never modified.
package table
