/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every size cap of clrattach, in one place. Anything read from a target (its /proc files, its
 * filesystem, its IPC replies) or from the network is bounded by one of these; a larger input is
 * rejected with -EPROTO/-E2BIG, never truncated silently.
 */
#ifndef CLRATTACH_BOUNDS_H
#define CLRATTACH_BOUNDS_H

/* Error text. */
#define CLA_ERR_MSG_MAX  512
#define CLA_ERR_HINT_MAX 384

/* Diagnostic IPC. The wire size field is a u16, so 65535 is the protocol's own ceiling. */
#define IPC_HEADER_SIZE      20
#define IPC_MAX_MESSAGE      65535
#define IPC_MAX_STRING_UNITS 16384 /* UTF-16 units in one decoded string */
/* Bytes of profiler client data we send: what one frame can hold beside the header (20), the
 * attach timeout (4), the CLSID (16), the shortest path string (4 + 4) and the data's own
 * length (4). A longer path leaves less; the encoder checks the whole frame. */
#define IPC_MAX_CLIENT_DATA (IPC_MAX_MESSAGE - 20 - 4 - 16 - 8 - 4)

/* --env: variables set in a runtime paused at startup (SetEnvironmentVariable), at most
 * ENV_VARS_MAX of them, each "NAME=VALUE" within ENV_VAR_BYTES_MAX bytes once {dir} and {entry}
 * are expanded (one frame would hold more; a profiler's settings are short). An @FILE holds
 * at most ENV_FILE_MAX bytes; a result shows each variable in ENV_SHOWN_MAX bytes. */
#define ENV_VARS_MAX      32
#define ENV_VAR_BYTES_MAX 4096
#define ENV_FILE_MAX      (64 * 1024)
#define ENV_SHOWN_MAX     160

/* clrattach otel: the agent's status file (profset/otel_status.h), read back through the target's
 * root, at most OTEL_STATUS_MAX bytes; at most OTEL_STATUS_LIST_MAX names per list kept. */
#define OTEL_STATUS_MAX      (64 * 1024)
#define OTEL_STATUS_LIST_MAX 16

/* /proc files of a target. */
#define PROC_STAT_MAX         4096
#define PROC_STATUS_MAX       16384
#define PROC_ENVIRON_MAX      (256 * 1024)
#define PROC_CMDLINE_MAX      (64 * 1024)
#define PROC_MOUNTINFO_MAX    (1024 * 1024)
#define PROC_MAPS_MAX         (4 * 1024 * 1024)
#define PROC_MOUNTS_MAX       10000 /* mountinfo lines */
#define TARGET_PATH_MAX_MOUNT 1024  /* a mount point we can reason about */
#define PROC_CGROUP_MAX       16384
#define PROC_GROUPS_MAX       256 /* supplementary groups kept from a status Groups line */

/* A target's TMPDIR value and paths inside a target root. */
#define TARGET_PATH_MAX         4096
#define TARGET_DIR_ENTRIES_MAX  100000 /* directory entries scanned for sockets */
#define TARGET_OPEN_RETRIES_MAX 64     /* openat2 EAGAIN/EINTR retries of one lookup */
#define TARGET_LINKS_MAX        40     /* links one lookup follows (the kernel's MAXSYMLINKS) */
#define TARGET_WALK_DEPTH_MAX   64     /* directories a link-following walk holds open */

/* The profiler we copy. */
#define PROFILER_MAX_SIZE (256 * 1024 * 1024)

/* The directory a delivery writes into (lib/deliver/deliver.c) is the target's: anyone sharing it
 * decides how many entries it holds. A delivery lists it at most twice (the sweep of stale
 * temporaries, and the search for a fallback of ours when another uid holds the usual name),
 * each time reading at most DELIVER_SCAN_ENTRIES_MAX entries. The sweep removes a temporary of
 * ours only once it is DELIVER_STALE_AFTER_S old (far beyond any delivery: one copies at most
 * PROFILER_MAX_SIZE bytes), and at most DELIVER_SWEEP_REMOVE_MAX files and directories in all,
 * trees' contents included, PROFDIR_DEPTH_MAX levels deep; the rest waits for the next one. */
#define DELIVER_SCAN_ENTRIES_MAX    4096
#define DELIVER_STALE_AFTER_S       600 /* ten minutes */
#define DELIVER_SWEEP_REMOVE_MAX    1024
#define DELIVER_FALLBACK_CHECKS_MAX 4 /* fallback candidates of ours whose bytes are compared */

/* A profiler directory (vendor profilers: the library, its plugins, configs), from disk or a tar
 * stream on stdin: relative names, files, depth; all its bytes together stay within
 * PROFILER_MAX_SIZE. */
#define PROFDIR_PATH_MAX  512         /* bytes of one relative name */
#define PROFDIR_FILES_MAX 512         /* files and directories; CLRIE ships 3, Datadog ~60 */
#define PROFDIR_DEPTH_MAX 8           /* directory levels below the profiler directory */
#define TAR_PAX_MAX       (64 * 1024) /* bytes of one pax extended header */

/* Host-side scans. */
#define PROC_SCAN_MAX_PIDS 4194304 /* pid_max ceiling on Linux */

/* Stall isolation (lib/target/fsworker.c, procindex*.c): what `ps` and `watch` do below other
 * processes' roots runs in a helper process. One request (a socket directory opened or listed,
 * a socket looked up) gets this long to be answered; a helper that does not answer is killed
 * and kept to be reaped, and at most FSWORKER_STUCK_MAX such ones wait at once (each stuck in a
 * filesystem that never answers, a FUSE daemon that read the request: SIGKILL cannot end that
 * wait). A directory that did not answer is left alone from MIN doubling up to MAX, and a scan
 * gives up at most SCAN_STALLS_MAX helpers (the groups after wait for the next scan). */
#define PROCINDEX_ANSWER_MS            2000
#define FSWORKER_STUCK_MAX             16
#define FSWORKER_REQUEST_MAX           (TARGET_PATH_MAX + 256)
#define FSWORKER_REPLY_MAX             (32 * (TARGET_DIR_ENTRIES_MAX + 1)) /* entries of 32 bytes */
#define PROCINDEX_STALL_BACKOFF_MIN_MS 5000
#define PROCINDEX_STALL_BACKOFF_MAX_MS (10 * 60 * 1000)
#define PROCINDEX_SCAN_STALLS_MAX      2

/* Event-driven discovery (lib/target/direvents.c, procindex_events.c, lib/flow/watch_discover.c):
 * the socket directories held open are watched with inotify, at most DIREVENTS_WATCHES_MAX at
 * once (past it a directory is seen by the scan alone). The watcher reads at most
 * DIREVENTS_READ_MAX bytes of events per wakeup, and while a scan is owed it leaves the queue
 * unread (the kernel merges, or overflows: a scan). New processes are noticed when they open a
 * file a runtime found before was started from (its .NET host, its libcoreclr.so: IN_OPEN, at
 * most PROCINDEX_HINTS_MAX files), and by /proc/loadavg's last pid (a thread's pid not counted),
 * read every DISCOVER_TICK_MS while processes come, the tick doubling up to DISCOVER_TICK_MAX_MS
 * while they do not (a quiet node wakes the watcher 5 times a second; watch --pid-poll). The
 * scans events ask for have a budget of time: a bucket of DISCOVER_BURST_MS of scanning, refilled
 * at 1/DISCOVER_SHARE of the clock (every scan's cost taken from it), and at least
 * DISCOVER_GAP_MIN_MS between two. A quiet node has the whole burst for the next runtime's start; a
 * flood of events, or a node that starts processes all the time, gets scans on 1/DISCOVER_SHARE of
 * one CPU in the long run. */
#define DIREVENTS_WATCHES_MAX 128
#define DIREVENTS_READ_MAX    (64 * 1024)
#define DISCOVER_TICK_MS      20
#define DISCOVER_TICK_MAX_MS  200
#define DISCOVER_GAP_MIN_MS   1
#define DISCOVER_BURST_MS     200
#define DISCOVER_SHARE        50
/* The hints of a runtime's start (procindex_hints.h) have a bucket of their own: a burst of
 * DISCOVER_HINT_BURST_MS, refilled at 1/DISCOVER_HINT_SHARE of the clock. Each open starts a
 * series of DISCOVER_FOLLOW_SCANS scans after the first, DISCOVER_FOLLOW_MS apart, doubling. */
#define DISCOVER_HINT_BURST_MS 100
#define DISCOVER_HINT_SHARE    100
#define DISCOVER_FOLLOW_SCANS  5
#define DISCOVER_FOLLOW_MS     2

/* A runtime whose socket is up before it can take a profiler answers AttachProfiler with "not
 * yet available" for a few milliseconds (lib/flow/attach.c). While it is younger than
 * ATTACH_NOT_YET_YOUNG_MS and its environment does not pause it, the same attempt asks again
 * every ATTACH_NOT_YET_STEP_MS for up to ATTACH_NOT_YET_RETRY_MS (then the answer stands): a
 * watcher then needs no second scan and attach for it, and `attach` on an app just started no
 * second run. */
#define ATTACH_NOT_YET_YOUNG_MS 10000
#define ATTACH_NOT_YET_RETRY_MS 50
#define ATTACH_NOT_YET_STEP_MS  3

/* The sample profiler (profiler/clientdata.c): its own cap on client data (clrattach sends up to
 * IPC_MAX_CLIENT_DATA for other profilers); anything longer is rejected, not truncated. */
#define CLRPROBE_CLIENT_DATA_MAX  4096
#define CLRPROBE_OUT_PATH_MAX     1024      /* bytes of the report path, without the NUL */
#define CLRPROBE_DETACH_AFTER_MAX 31536000u /* one year in seconds */

/* Kubernetes API (lib/k8s_*.c). Event limits are the apiserver's own (bytes, Go len()). */
#define K8S_URL_MAX            512   /* https://[v6-host]:port */
#define K8S_FILE_PATH_MAX      4096  /* token, CA, namespace file paths */
#define K8S_TOKEN_MAX          16384 /* a bound SA token is ~1 KiB; JWTs with claims grow */
#define K8S_NAMESPACE_FILE_MAX 256   /* the SA dir's `namespace` file */
#define K8S_NAME_MAX           253   /* DNS-1123 subdomain: pod and event names */
#define K8S_LABEL_MAX          63    /* DNS-1123 label: namespace, container */
#define K8S_UID_MAX            63
#define K8S_EVENT_FIELD_MAX    128               /* reason, action, reportingInstance */
#define K8S_EVENT_NOTE_MAX     1024              /* "Maximal length of the note is 1kB" */
#define K8S_RESPONSE_MAX       (2 * 1024 * 1024) /* any reply body; a stored pod is < 1.5 MiB */
#define K8S_STATUS_MAX         (64 * 1024)       /* a Status body we agree to parse */
#define K8S_STATUS_CAUSES_MAX  8                 /* causes kept from one Status */
#define K8S_RETRY_AFTER_MAX_S  30                /* larger Retry-After values are clamped */
#define K8S_ATTEMPT_LOG_MAX    16                /* attempts recorded in a report outcome */

/* A CA bundle read from a target's service account (k8s_target_sa.c), which TLS reads whole:
 * a cluster's holds a few certificates of about 1 KiB. */
#define K8S_CA_FILE_MAX (1024 * 1024)

/* Event series (k8s_report_event_dedup): the cache is a fixed array scanned linearly, so its
 * size bounds both memory and the cost of a lookup in a long-running `clrattach watch`. */
#define K8S_SERIES_MAX     64  /* distinct keys remembered; the oldest is evicted */
#define K8S_SERIES_KEY_MAX 512 /* bytes of a caller's series key; longer keys are refused */

/* The agent (docs/agent.md): the pod watch stream of its node (lib/report/k8s_watch.c) and the
 * admin's profiles (lib/report/agent_profiles.c). One watch line holds one pod, so it shares the
 * reply cap; a pod has at most a few containers (init and ephemeral ones are not kept). */
#define K8S_WATCH_LINE_MAX        K8S_RESPONSE_MAX
#define K8S_LIST_MAX              (64 * 1024 * 1024) /* a PodList of one node's pods (110 by default) */
#define K8S_LIST_PODS_MAX         1024 /* pods in one list; a node runs at most ~250 */
#define K8S_POD_CONTAINERS_MAX    32   /* containers of one pod kept from its status */
#define K8S_RESOURCE_VERSION_MAX  64   /* an etcd revision, decimal in practice */
#define K8S_CONTAINER_ID_MAX      128  /* "containerd://" and 64 hex digits */
#define K8S_ANNOTATION_KEPT       255 /* bytes of an annotation value kept; its length is kept too */
#define AGENT_CONFIG_MAX          (256 * 1024) /* bytes of the profile configuration */
#define AGENT_PROFILES_MAX        64           /* profiles one configuration defines */
#define AGENT_SELECTOR_TERMS_MAX  8            /* terms of one namespace selector */
#define AGENT_SELECTOR_VALUES_MAX 16           /* values of one `in (...)` term */
#define K8S_NS_LABELS_MAX         64    /* labels kept of one namespace; more: not selected */
#define K8S_NS_CACHE_MAX          64    /* namespaces whose labels the agent keeps */
#define K8S_NS_TTL_MS             30000 /* a namespace's labels are asked for again after this */
#define K8S_WATCH_TIMEOUT_S       300   /* timeoutSeconds of the agent's watch request */
#define K8S_WATCH_STALL_SLACK_MS  30000 /* past timeoutSeconds with no byte: stalled (at most) */
#define AGENT_PODS_MAX            K8S_LIST_PODS_MAX /* annotated pods the agent keeps */

/* Profiler build choice (lib/profset/rid.c, lib/profset/elfinfo.c). The ELF reader runs on the
 * target's own executable, so its loops and strings are capped well above anything a linker
 * produces. */
#define RID_MAX             64    /* "ubuntu.22.04-x64"; the longest real RIDs are ~25 bytes */
#define ELF_MAX_PHDRS       256   /* the kernel stops at 64 KiB of headers; real files have ~13 */
#define ELF_MAX_DYN_ENTRIES 1024  /* dynamic entries before DT_NULL; real files have ~40 */
#define ELF_MAX_NEEDED      64    /* DT_NEEDED entries; the dotnet host has 6 */
#define ELF_INTERP_MAX      255   /* bytes of PT_INTERP without the NUL */
#define ELF_NEEDED_BYTES    4096  /* DT_NEEDED names kept, NULs included; real SONAMEs are short */
#define ELF_RUNPATH_MAX     1023  /* bytes of DT_RUNPATH/DT_RPATH kept */
#define ELF_SONAME_MAX      255   /* bytes of DT_SONAME: a file name, so NAME_MAX */
#define ELF_MAX_HASH_STEPS  65536 /* symbols compared in one hash-chain walk (dlsym's lookup) */

/* The loader search list of lib/profset/ldsearch.c: directories and the bytes holding them, per
 * list (LD_LIBRARY_PATH, the run path, the musl path file, the default directories); entries past
 * them are reported as not checked, never refused. */
#define LDSEARCH_MAX_DIRS 64
#define LDSEARCH_BUF      8192
#define LDSEARCH_LISTS    4

/* Bytes of a file a caller reads for elfinfo. Linkers may put PT_DYNAMIC near the end of the
 * ELF image (libcoreclr.so: 7 MiB, dynamic section at 6.6 MiB), so a short prefix is not enough;
 * a single-file app's appended bundle lies after the ELF image and need not be read. */
#define ELF_READ_MAX (64 * 1024 * 1024)

/* A file of the target's read for its headers only (lib/profset/elffile.c): in chunks of
 * 1 << ELFFILE_CHUNK_SHIFT bytes, one more each time the parser asks, at most ELFFILE_ROUNDS_MAX
 * parses. A real library needs at most 5 or 6 pages (ELF and program headers, dynamic section,
 * string table, symbol hash table and the symbols it leads to); libcoreclr.so, 20 KiB. */
#define ELFFILE_CHUNK_SHIFT 12 /* a page */
#define ELFFILE_ROUNDS_MAX  64

/* already_active's search for the profiler holding the slot (lib/flow/attach.c): the target
 * decides how many libraries it maps, and how large; a search that stops at a cap or at the
 * deadline says the holder was not determined. */
#define HOLDER_LIBS_MAX       256               /* mapped libraries looked at; an app has ~40 */
#define HOLDER_FILE_BYTES_MAX (256 * 1024)      /* bytes read from one of them */
#define HOLDER_BYTES_MAX      (8 * 1024 * 1024) /* bytes read from all of them */

/* The dependency check's look at the SONAMEs of what the target has mapped
 * (lib/profset/depcheck.c), for a needed name found in none of the loader's directories: the
 * target decides how many libraries it maps and how large they are. Past a cap the remaining
 * files are not examined, and the miss is reported as usual (--skip-dependency-check). */
#define DEPCHECK_SONAME_FILES_MAX  128               /* mapped files whose SONAME is read */
#define DEPCHECK_SONAME_FILE_BYTES (256 * 1024)      /* bytes read from one of them */
#define DEPCHECK_SONAME_BYTES_MAX  (4 * 1024 * 1024) /* bytes read from all of them */

/* `ps` asks the runtimes for ProcessInfo all at once (lib/flow/ps.c), under one deadline: at
 * most this many connections in flight (two fds each: the socket's O_PATH and the connection);
 * the next runtime is asked when one answers. */
#define PS_QUERIES_IN_FLIGHT_MAX 128

/* The listening port (`--listen`: lib/runtime/listen_sock.c, lib/flow/listen*.c). Anything that
 * can reach the socket's directory may connect, as often as it likes: each accepted connection
 * gets LISTEN_ADVERT_MS to deliver its 34-byte advertisement (the runtime writes it the moment
 * it connects, within its own 100 ms write timeout), at most LISTEN_PENDING_MAX wait at once
 * (the oldest is dropped for a new one), and one turn of the loop accepts at most
 * LISTEN_ACCEPT_BATCH before it serves the runtimes it already knows. LISTEN_INSTANCES_MAX
 * runtime instances (cookies) are tracked, each holding at most one connection. */
#define LISTEN_BACKLOG       64
#define LISTEN_PENDING_MAX   64
#define LISTEN_ADVERT_MS     1000
#define LISTEN_ACCEPT_BATCH  16
#define LISTEN_INSTANCES_MAX 256
#define ADVERT_PID_MAX       PROC_SCAN_MAX_PIDS /* the kernel's pid_max ceiling */
/* A runtime's ProcessEnvironment block (lib/runtime/ipc_environ.c): the bytes it announces and
 * the variables in them; /proc/<pid>/environ is capped alike (PROC_ENVIRON_MAX). */
#define IPC_ENV_BLOCK_MAX (512 * 1024) /* UTF-16: twice PROC_ENVIRON_MAX */
#define IPC_ENV_VARS_MAX  16384

#endif
