module kite.local/registry

go 1.26.0
