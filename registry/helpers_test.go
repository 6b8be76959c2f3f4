package registry_test

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
)

type typesUID = types.UID

func fieldsParse(s string) (fields.Selector, error) { return fields.ParseSelector(s) }
