module github.com/corral-go/corral/examples/schedules

go 1.26.0

require (
	github.com/corral-go/corral v0.3.0
	github.com/robfig/cron/v3 v3.0.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
