module kite.local/pause

go 1.26.0
