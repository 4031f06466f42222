# syntax=docker/dockerfile:1
# clrattach image: a static binary and the sample profilers, nothing else (no shell, no libc,
# no CA bundle: the API server's CA always comes from the service-account volume).
#   docker build -t registry.example.com/clrattach:$(cat VERSION) .
# The builder is Debian bookworm, the release whose sources scripts/build-static.sh builds the
# static libraries from (curl, wolfSSL, jansson, libseccomp, with Debian's security patches).

FROM debian:bookworm AS builder
# build-essential brings linux-libc-dev (the kernel headers copied for musl); dpkg-dev is
# `apt-get source` (and brings `patch`); cmake builds jansson and wolfSSL, gperf libseccomp's
# syscall table.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential musl-tools dpkg-dev cmake gperf perl pkg-config file ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# static: build/static/clrattach (+ .stripped); the glibc profiler for glibc-based app images
# (Debian, Ubuntu, the official .NET images) and the musl one for Alpine-based images.
RUN make static build/libclrprobe.so build/musl/libclrprobe.so \
 && file build/static/clrattach.stripped | grep -q 'statically linked'

FROM scratch
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="clrattach" \
      org.opencontainers.image.description="Attach a profiler to a running .NET (CoreCLR) process across container boundaries; reports a Kubernetes Event" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/clrattach/clrattach" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="scratch"
COPY --from=builder /src/build/static/clrattach.stripped /clrattach
COPY --from=builder /src/build/libclrprobe.so /profilers/linux-x64/libclrprobe.so
COPY --from=builder /src/build/musl/libclrprobe.so /profilers/linux-musl-x64/libclrprobe.so
# The pod spec sets the app's uid (runAsUser); this is only the non-root default
# (65532, "nonroot" in distroless images).
USER 65532:65532
ENTRYPOINT ["/clrattach"]
