# The project's vocabulary. Each target is a thin wrapper: the real commands
# live in scripts/ so that CI and the README use exactly the same ones.
.PHONY: build run test test-race test-robustness lint cluster clean

build:
	go build -o bin/mure ./cmd/mure

run:
	go run ./cmd/mure serve --data ./data

test test-race:
	bash scripts/test.sh

# 20 randomized fault schedules of 20 s each, checked for linearizability
# (about 8 minutes; bounded by -timeout).
test-robustness:
	MURE_ROBUSTNESS_RUNS=20 go test -count=1 -timeout 30m -run TestLinearizabilityUnderFaults -v ./systest

lint:
	gofmt -l . && go vet ./...

cluster: build
	bash scripts/cluster.sh

clean:
	rm -rf bin data
