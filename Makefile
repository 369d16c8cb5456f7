# The project's vocabulary. Each target is a thin wrapper: the real commands
# live in scripts/ so that CI and the README use exactly the same ones.
.PHONY: build run test test-race lint cluster clean

build:
	go build -o bin/mure ./cmd/mure

run:
	go run ./cmd/mure serve --data ./data

test test-race:
	bash scripts/test.sh

lint:
	gofmt -l . && go vet ./...

cluster: build
	bash scripts/cluster.sh

clean:
	rm -rf bin data
