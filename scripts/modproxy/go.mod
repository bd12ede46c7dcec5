module github.com/corral-go/corral/scripts/modproxy

go 1.26.0

require (
	go.uber.org/goleak v1.3.0
	golang.org/x/mod v0.40.0
)
