/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_TEST_SHELL_H
#define CLRATTACH_TEST_SHELL_H

/*
 * sh(): runs a shell command that builds a test's fixture tree (mkdir, cp, ln, mkfifo, tar),
 * failing the test with the command's text when it does not exit 0. Include after cmocka.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        fail_msg("command failed: %s", cmd);
}

#endif
