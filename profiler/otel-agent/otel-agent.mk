# clrattach's OpenTelemetry agent (profiler/otel-agent, docs/otel.md): the startup hook and its
# core, published together into $(OTEL_AGENT_DIR) with the .NET SDK, from the NuGet packages the
# core pins (core/packages.lock.json; restored in locked mode under CI=true). AnyCPU managed code:
# one build serves x64 and arm64. Built once, again only when a source, project or lock file
# changes. $(OTEL_AGENT_DIR)/packages.tsv lists what it is made of (package, version, direct or
# transitive, shipped or not, licence, the lock file's SHA-512), for `clrattach version` and the
# SBOM.
OTEL_AGENT_SRC := profiler/otel-agent
OTEL_AGENT_DIR := $(BUILD)/otel-agent
OTEL_AGENT := $(OTEL_AGENT_DIR)/ClrattachOtelAgent.dll
OTEL_AGENT_INPUTS := $(wildcard $(OTEL_AGENT_SRC)/hook/*.cs $(OTEL_AGENT_SRC)/hook/*.csproj \
                       $(OTEL_AGENT_SRC)/hook/packages.lock.json $(OTEL_AGENT_SRC)/core/*.cs \
                       $(OTEL_AGENT_SRC)/core/*.csproj $(OTEL_AGENT_SRC)/core/packages.lock.json)
OTEL_AGENT_PUBLISH := -c Release --nologo -v q -p:Version=$(VERSION) \
                      -p:IncludeSourceRevisionInInformationalVersion=false

.PHONY: otel-agent
otel-agent: $(OTEL_AGENT) $(OTEL_AGENT_DIR)/packages.tsv

# The framework's System.Diagnostics.DiagnosticSource is the app's, never the agent's (the hook
# refuses a runtime whose one is older than the SDK references): the package's copy is dropped.
$(OTEL_AGENT): $(OTEL_AGENT_INPUTS)
	rm -rf $(OTEL_AGENT_DIR) && mkdir -p $(OTEL_AGENT_DIR)
	dotnet publish $(OTEL_AGENT_SRC)/core/ClrattachOtelAgent.Core.csproj $(OTEL_AGENT_PUBLISH) \
	    -o $(OTEL_AGENT_DIR)
	dotnet publish $(OTEL_AGENT_SRC)/hook/ClrattachOtelAgent.csproj $(OTEL_AGENT_PUBLISH) \
	    -o $(OTEL_AGENT_DIR)
	rm -f $(OTEL_AGENT_DIR)/System.Diagnostics.DiagnosticSource.dll \
	    $(OTEL_AGENT_DIR)/ClrattachOtelAgent.Core.deps.json

$(OTEL_AGENT_DIR)/packages.tsv: $(OTEL_AGENT) $(OTEL_AGENT_SRC)/packages_tsv.py
	python3 $(OTEL_AGENT_SRC)/packages_tsv.py $(OTEL_AGENT_SRC)/core/packages.lock.json \
	    $(OTEL_AGENT_DIR) >$@.tmp && mv $@.tmp $@

# The apps tests/e2e/test_otel_agent.sh applies the agent to: a console app (HttpClient; with
# OTELAPP_OWN_SDK=1 an OpenTelemetry SDK of its own) and an ASP.NET Core app.
OTEL_APPS := $(BUILD)/otel-apps/console/OtelConsole.dll $(BUILD)/otel-apps/web/OtelWeb.dll
.PHONY: otel-apps
otel-apps: $(OTEL_APPS)
$(BUILD)/otel-apps/console/OtelConsole.dll: $(wildcard tests/otel-apps/*.cs tests/otel-apps/console/*.cs \
                                              tests/otel-apps/console/*.csproj \
                                              tests/otel-apps/console/packages.lock.json)
	dotnet build tests/otel-apps/console/OtelConsole.csproj -c Release -o $(dir $@) --nologo -v q
$(BUILD)/otel-apps/web/OtelWeb.dll: $(wildcard tests/otel-apps/*.cs tests/otel-apps/web/*.cs \
                                      tests/otel-apps/web/*.csproj)
	dotnet build tests/otel-apps/web/OtelWeb.csproj -c Release -o $(dir $@) --nologo -v q
