/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRPROBE_H
#define CLRPROBE_H

/*
 * Public facts about the sample profiler libclrprobe.so, shared with clrattach and the tests.
 * The CLSID is what a client must put in the AttachProfiler request; DllGetClassObject answers
 * CLASS_E_CLASSNOTAVAILABLE (0x80040111) for any other.
 */
#define CLRPROBE_CLSID   "{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}"
#define CLRPROBE_VERSION "0.1.0"

/* Default report path inside the target, filled with the target's own (namespace-local) pid. */
#define CLRPROBE_DEFAULT_OUT_FMT "/tmp/clrprobe-%d.json"

#endif
