/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Everything cmd/ prints goes through here, so that every line is rendered (render.h) and every
 * early end still gives the one JSON document that -o json promises.
 */
#include <stdarg.h>
#include <string.h>

#include "cli.h"
#include "base/render.h"
#include "report/result_json.h"
#include "base/util.h"

static bool json_wanted;
static const char *json_cmd = "clrattach";

void cli_scan_for_json(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return;
        if (strcmp(a, "-ojson") == 0 || strcmp(a, "--output=json") == 0 ||
            ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc &&
             strcmp(argv[i + 1], "json") == 0))
            json_wanted = true;
    }
}

void cli_set_command(const char *cmd)
{
    json_cmd = cmd;
}

/*
 * Every result and error line passes through the renderer as the last line of defence: a
 * target string that a call site forgot to render still cannot reach the terminal or a log raw,
 * while our own text, text that is already rendered, and our own UTF-8 ('…', '→') come out
 * unchanged.
 */
void say(FILE *f, const char *fmt, ...)
{
    char line[4096], shown[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    render_message(line, strnlen(line, sizeof(line)), shown, sizeof(shown));
    fprintf(f, "%s\n", shown);
}

void print_error(const char *what, const struct cla_error *e)
{
    say(stderr, "clrattach: %s: %s", what, e->msg[0] ? e->msg : "failed");
    if (e->hint[0])
        say(stderr, "clrattach: next step: %s", e->hint);
}

static void print_error_json(const char *cmd, enum attach_outcome o, const char *msg,
                             const char *hint)
{
    if (!json_wanted)
        return;
    _cleanup_free_ char *js = result_error_json(cmd, o, msg, hint);
    if (js)
        printf("%s\n", js);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[1024], hint[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(hint, sizeof(hint), "see 'clrattach %s%s--help'", cmd, cmd[0] ? " " : "");
    say(stderr, "clrattach: usage error: %s", msg);
    say(stderr, "clrattach: next step: %s", hint);
    print_error_json(cmd[0] ? cmd : json_cmd, ATTACH_USAGE, msg, hint);
    return EXIT_USAGE;
}

int fatal(const char *what, enum attach_outcome o, const struct cla_error *e)
{
    print_error(what, e);
    print_error_json(json_cmd, o, e->msg[0] ? e->msg : "failed", e->hint);
    return attach_outcome_exit_code(o);
}

int out_of_memory(void)
{
    fputs("clrattach: internal error: out of memory\n", stderr);
    return 1;
}
