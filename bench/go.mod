module github.com/corral-go/corral/bench

go 1.25.0

replace github.com/corral-go/corral => ../

require (
	github.com/ThreeDotsLabs/watermill v1.5.1 // indirect
	github.com/alitto/pond/v2 v2.7.1 // indirect
	github.com/antithesishq/antithesis-sdk-go v0.7.2-default-no-op // indirect
	github.com/avast/retry-go/v4 v4.7.0 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/corral-go/corral v0.0.0-00010101000000-000000000000 // indirect
	github.com/corral-go/corral/queue/jetstream v0.0.0-00010101000000-000000000000 // indirect
	github.com/failsafe-go/failsafe-go v0.9.8 // indirect
	github.com/gammazero/deque v0.2.1 // indirect
	github.com/gammazero/workerpool v1.1.3 // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/lithammer/shortuuid/v3 v3.0.7 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
	github.com/nats-io/jwt/v2 v2.8.2 // indirect
	github.com/nats-io/nats-server/v2 v2.14.5 // indirect
	github.com/nats-io/nats.go v1.53.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/oklog/ulid v1.3.1 // indirect
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/sourcegraph/conc v0.3.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

replace github.com/corral-go/corral/queue/jetstream => ../queue/jetstream
