/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ipc.h"
#include "base/render.h"

static const uint8_t magic[14] = "DOTNET_IPC_V1";

static void test_guid_roundtrip(void **state)
{
    (void)state;
    struct ipc_guid g;
    assert_int_equal(ipc_guid_parse("{12345678-9ABC-DEF0-1122-334455667788}", &g), 0);
    static const uint8_t wire[16] = {0x78, 0x56, 0x34, 0x12, 0xBC, 0x9A, 0xF0, 0xDE,
                                     0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
    assert_memory_equal(g.b, wire, 16);
    char out[39];
    ipc_guid_format(&g, out);
    assert_string_equal(out, "{12345678-9ABC-DEF0-1122-334455667788}");
    assert_int_equal(ipc_guid_parse("12345678-9abc-def0-1122-334455667788", &g), 0);
    assert_memory_equal(g.b, wire, 16);
}

static void test_guid_rejects(void **state)
{
    (void)state;
    struct ipc_guid g;
    assert_int_equal(ipc_guid_parse("", &g), -EINVAL);
    assert_int_equal(ipc_guid_parse(NULL, &g), -EINVAL);
    assert_int_equal(ipc_guid_parse("{12345678-9ABC-DEF0-1122-33445566778}", &g), -EINVAL);
    assert_int_equal(ipc_guid_parse("{12345678-9ABC-DEF0-1122-3344556677880}", &g), -EINVAL);
    assert_int_equal(ipc_guid_parse("{12345678_9ABC-DEF0-1122-334455667788}", &g), -EINVAL);
    assert_int_equal(ipc_guid_parse("{1234567G-9ABC-DEF0-1122-334455667788}", &g), -EINVAL);
    assert_int_equal(ipc_guid_parse("{12345678-9ABC-DEF0-1122-334455667788", &g), -EINVAL);
}

/* The worked example of the reference: timeout 5000, GUID above, "/p.so", no client data. */
static void test_encode_attach_exact(void **state)
{
    (void)state;
    static const uint8_t want[60] = {
        0x44, 0x4F, 0x54, 0x4E, 0x45, 0x54, 0x5F, 0x49, 0x50, 0x43, 0x5F, 0x56, 0x31, 0x00, 0x3C,
        0x00, 0x03, 0x01, 0x00, 0x00, 0x88, 0x13, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12, 0xBC, 0x9A,
        0xF0, 0xDE, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x06, 0x00, 0x00, 0x00, 0x2F,
        0x00, 0x70, 0x00, 0x2E, 0x00, 0x73, 0x00, 0x6F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    struct ipc_guid g;
    assert_int_equal(ipc_guid_parse("{12345678-9ABC-DEF0-1122-334455667788}", &g), 0);
    uint8_t buf[128];
    struct cla_error e = {0};
    int n = ipc_encode_attach(5000, &g, "/p.so", NULL, 0, buf, sizeof(buf), &e);
    assert_int_equal(n, 60);
    assert_memory_equal(buf, want, 60);
}

static void test_encode_attach_client_data_and_utf8(void **state)
{
    (void)state;
    struct ipc_guid g = {{0}};
    uint8_t buf[256];
    struct cla_error e = {0};
    /* "é" is one UTF-16 unit, U+1F600 a surrogate pair. */
    int n = ipc_encode_attach(1, &g, "/\xC3\xA9\xF0\x9F\x98\x80", "ab", 2, buf, sizeof(buf), &e);
    assert_int_equal(n, 20 + 4 + 16 + 4 + 5 * 2 + 4 + 2);
    const uint8_t *p = buf + 40;
    assert_int_equal(p[0], 5); /* '/', 'é', hi, lo, NUL */
    assert_int_equal(p[4] | p[5] << 8, '/');
    assert_int_equal(p[6] | p[7] << 8, 0xE9);
    assert_int_equal(p[8] | p[9] << 8, 0xD83D);
    assert_int_equal(p[10] | p[11] << 8, 0xDE00);
    assert_int_equal(p[12] | p[13] << 8, 0);
    assert_int_equal(p[14], 2);
    assert_memory_equal(p + 18, "ab", 2);
    assert_int_equal(buf[14] | buf[15] << 8, n);
}

static void test_encode_attach_rejects(void **state)
{
    (void)state;
    struct ipc_guid g = {{0}};
    uint8_t buf[256];
    struct cla_error e = {0};
    assert_int_equal(ipc_encode_attach(1, &g, "", NULL, 0, buf, sizeof(buf), &e), -EINVAL);
    assert_int_equal(ipc_encode_attach(1, &g, "/a\xC3", NULL, 0, buf, sizeof(buf), &e), -EINVAL);
    assert_int_equal(ipc_encode_attach(1, &g, "/\xC0\xAF", NULL, 0, buf, sizeof(buf), &e),
                     -EINVAL); /* overlong '/' */
    assert_int_equal(ipc_encode_attach(1, &g, "/\xED\xA0\x80", NULL, 0, buf, sizeof(buf), &e),
                     -EINVAL); /* encoded surrogate */
    assert_int_equal(ipc_encode_attach(1, &g, "/p.so", NULL, 0, buf, 30, &e), -ENOBUFS);
    static uint8_t big[IPC_MAX_CLIENT_DATA + 1];
    assert_int_equal(ipc_encode_attach(1, &g, "/p.so", big, sizeof(big), buf, sizeof(buf), &e),
                     -E2BIG);
    assert_non_null(strstr(e.msg, "client data"));
    /* What the frame holds: all of it with the shortest path, less with a longer one. */
    static uint8_t frame[IPC_MAX_MESSAGE];
    assert_int_equal(
        ipc_encode_attach(1, &g, "/", big, IPC_MAX_CLIENT_DATA, frame, sizeof(frame), &e),
        IPC_MAX_MESSAGE);
    assert_true(
        ipc_encode_attach(1, &g, "/p.so", big, IPC_MAX_CLIENT_DATA, frame, sizeof(frame), &e) < 0);
}

/* A buffer of the room the encoders announce always takes the frame: ASCII, two-, three- and
 * four-byte UTF-8 (a surrogate pair), with and without client data; past the cap, the room is
 * the cap and the encoder refuses the frame itself. */
static void test_frame_room(void **state)
{
    (void)state;
    struct ipc_guid g = {{0}};
    static const char *const paths[] = {"/p.so", "/\xC3\xA9\xC3\xA9.so", "/\xE2\x82\xAC",
                                        "/\xF0\x9F\x98\x80\xF0\x9F\x98\x80"};
    static uint8_t buf[IPC_MAX_MESSAGE];
    struct cla_error e = {0};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        for (size_t cd = 0; cd <= 3; cd += 3) {
            size_t room = ipc_attach_frame_room(paths[i], cd);
            int n = ipc_encode_attach(1, &g, paths[i], "abc", cd, buf, room, &e);
            assert_true(n > 0);
            assert_true((size_t)n <= room);
        }
        size_t room = ipc_startup_frame_room(paths[i]);
        int n = ipc_encode_startup(&g, paths[i], buf, room, &e);
        assert_true(n > 0);
        assert_true((size_t)n <= room);
    }
    /* ASCII is exactly two bytes a unit: the room is the frame. */
    assert_int_equal(ipc_attach_frame_room("/p.so", 2), 20 + 4 + 16 + 4 + 12 + 4 + 2);
    assert_int_equal(ipc_attach_frame_room("/p.so", IPC_MAX_CLIENT_DATA + 100), IPC_MAX_MESSAGE);
    /* The most client data with this path is a frame past the protocol's size: the room is
     * the cap and the encoder, not an overflow, says no. */
    static uint8_t big[IPC_MAX_CLIENT_DATA];
    size_t room = ipc_attach_frame_room("/p.so", IPC_MAX_CLIENT_DATA);
    assert_int_equal(room, IPC_MAX_MESSAGE);
    assert_true(ipc_encode_attach(1, &g, "/p.so", big, IPC_MAX_CLIENT_DATA, buf, room, &e) < 0);
}

static void test_encode_simple_and_startup(void **state)
{
    (void)state;
    uint8_t buf[128];
    struct cla_error e = {0};
    assert_int_equal(ipc_encode_simple(IPC_SET_PROCESS, IPC_PROCESS_INFO3, buf, sizeof(buf), &e),
                     20);
    assert_memory_equal(buf, magic, 14);
    assert_int_equal(buf[14], 20);
    assert_int_equal(buf[16], 4);
    assert_int_equal(buf[17], 8);
    struct ipc_guid g = {{1, 2, 3}};
    int n = ipc_encode_startup(&g, "/x", buf, sizeof(buf), &e);
    assert_int_equal(n, 20 + 16 + 4 + 6);
    assert_int_equal(buf[16], 3);
    assert_int_equal(buf[17], 2);
    assert_memory_equal(buf + 20, g.b, 16);
}

/* SetEnvironmentVariable 0x0403: header, then the name and the value as IPC strings (u32 count
 * of UTF-16 units with the NUL, then the units), nothing else. An empty value is "" (count 1),
 * never the null string (count 0) that the runtime would pass on as "remove". */
static void test_encode_setenv_exact(void **state)
{
    (void)state;
    uint8_t buf[128];
    struct cla_error e = {0};
    static const uint8_t want[] = {
        'D', 'O', 'T', 'N', 'E', 'T', '_', 'I', 'P',  'C', '_', 'V', '1', 0, 44,
        0,   4,   3,   0,   0,   3,   0,   0,   0,    'A', 0,   'B', 0,   0, 0, /* "AB" */
        5,   0,   0,   0,   '/', 0,   't', 0,   0xe9, 0,   '1', 0,   0,   0,    /* "/té1" */
    };
    int n = ipc_encode_setenv("AB",
                              "/t\xc3\xa9"
                              "1",
                              buf, sizeof(buf), &e);
    assert_int_equal(n, (int)sizeof(want));
    assert_memory_equal(buf, want, sizeof(want));
    assert_true(ipc_setenv_frame_room("AB", "/t\xc3\xa9"
                                            "1") >= sizeof(want));
    n = ipc_encode_setenv("A", "", buf, sizeof(buf), &e);
    assert_int_equal(n, 20 + 4 + 4 + 4 + 2);
    assert_int_equal(buf[28], 1); /* the empty value: count 1, the NUL alone */
    assert_int_equal(ipc_encode_setenv("", "x", buf, sizeof(buf), &e), -EINVAL);
    assert_int_equal(ipc_encode_setenv("A=B", "x", buf, sizeof(buf), &e), -EINVAL);
    assert_int_equal(ipc_encode_setenv("A", "\xff", buf, sizeof(buf), &e), -EINVAL);
    assert_int_equal(ipc_encode_setenv("AB", "x", buf, 30, &e), -ENOBUFS);
}

/* The Process set's perf map and startup hook frames, byte for byte as ds-process-protocol.h
 * parses them. */
static void test_encode_perfmap_and_startup_hook(void **state)
{
    (void)state;
    uint8_t buf[128];
    struct cla_error e = {0};
    static const uint8_t enable[] = {
        'D', 'O', 'T', 'N', 'E', 'T', '_', 'I', 'P', 'C', '_', 'V',
        '1', 0,   24,  0,   4,   5,   0,   0,   3,   0,   0,   0, /* PerfMapType 3: perfmap */
    };
    assert_int_equal(ipc_encode_enable_perfmap(IPC_PERFMAP_PERFMAP, buf, sizeof(buf), &e),
                     (int)sizeof(enable));
    assert_memory_equal(buf, enable, sizeof(enable));
    assert_int_equal(ipc_encode_enable_perfmap(IPC_PERFMAP_ALL, buf, sizeof(buf), &e), 24);
    assert_int_equal(buf[20], 1);
    assert_int_equal(ipc_encode_enable_perfmap(0, buf, sizeof(buf), &e), -EINVAL);
    assert_int_equal(ipc_encode_enable_perfmap(4, buf, sizeof(buf), &e), -EINVAL);
    assert_int_equal(ipc_encode_enable_perfmap(IPC_PERFMAP_ALL, buf, 23, &e), -ENOBUFS);

    assert_int_equal(ipc_encode_disable_perfmap(buf, sizeof(buf), &e), 20);
    assert_int_equal(buf[14], 20);
    assert_int_equal(buf[16], 4);
    assert_int_equal(buf[17], 6);

    static const uint8_t hook[] = {
        'D', 'O', 'T', 'N', 'E', 'T', '_', 'I', 'P', 'C', '_', 'V', '1', 0,   36, 0, 4, 7, 0,
        0,   6,   0,   0,   0,   '/', 0,   'h', 0,   '.', 0,   'd', 0,   'l', 0,  0, 0, /* "/h.dl"
                                                                                         */
    };
    int n = ipc_encode_apply_startup_hook("/h.dl", buf, sizeof(buf), &e);
    assert_int_equal(n, (int)sizeof(hook));
    assert_memory_equal(buf, hook, sizeof(hook));
    assert_true(ipc_startup_hook_frame_room("/h.dl") >= sizeof(hook));
    /* A relative path would be taken as an assembly name by the runtime. */
    assert_int_equal(ipc_encode_apply_startup_hook("h.dll", buf, sizeof(buf), &e), -EINVAL);
    assert_int_equal(ipc_encode_apply_startup_hook("", buf, sizeof(buf), &e), -EINVAL);
    assert_int_equal(ipc_encode_apply_startup_hook("/\xff.dll", buf, sizeof(buf), &e), -EINVAL);
    assert_int_equal(ipc_encode_apply_startup_hook("/h.dl", buf, 35, &e), -ENOBUFS);
}

static void test_env_check(void **state)
{
    (void)state;
    struct cla_error e = {0};
    size_t nl = 0;
    assert_int_equal(ipc_env_check("A=1", &nl, &e), 0);
    assert_int_equal(nl, 1);
    assert_int_equal(ipc_env_check("OTEL_X=a=b", &nl, &e), 0); /* '=' only the first splits */
    assert_int_equal(nl, 6);
    assert_int_equal(ipc_env_check("A=", &nl, &e), 0);
    assert_int_equal(ipc_env_check("A", &nl, &e), -EINVAL);
    assert_int_equal(ipc_env_check("=1", &nl, &e), -EINVAL);
    assert_int_equal(ipc_env_check("A=\x01", &nl, &e), -EINVAL);
    assert_int_equal(ipc_env_check("A\n=1", &nl, &e), -EINVAL);
    assert_int_equal(ipc_env_check("A=\xc2\x85", &nl, &e), -EINVAL); /* C1 NEL */
    assert_int_equal(ipc_env_check("A=\xff", &nl, &e), -EINVAL);
    /* The message names the variable, never its value (it may be a token). */
    ipc_env_check("TOKEN=\x01secret", &nl, &e);
    assert_null(strstr(e.msg, "secret"));
    char big[ENV_VAR_BYTES_MAX + 2];
    memset(big, 'x', sizeof(big));
    big[1] = '=';
    big[ENV_VAR_BYTES_MAX] = '\0';
    assert_int_equal(ipc_env_check(big, &nl, &e), 0);
    big[ENV_VAR_BYTES_MAX] = 'x';
    big[ENV_VAR_BYTES_MAX + 1] = '\0';
    assert_int_equal(ipc_env_check(big, &nl, &e), -E2BIG);
}

static void make_header(uint8_t *b, uint16_t size, uint8_t set, uint8_t id)
{
    memcpy(b, magic, 14);
    b[14] = (uint8_t)size;
    b[15] = (uint8_t)(size >> 8);
    b[16] = set;
    b[17] = id;
    b[18] = b[19] = 0;
}

static void test_decode_header(void **state)
{
    (void)state;
    uint8_t b[20];
    struct ipc_header h;
    struct cla_error e = {0};
    make_header(b, 24, 0xFF, 0x00);
    assert_int_equal(ipc_decode_header(b, 20, &h, &e), 0);
    assert_int_equal(h.size, 24);
    assert_int_equal(ipc_decode_header(b, 19, &h, &e), -EPROTO);
    make_header(b, 19, 0xFF, 0x00);
    assert_int_equal(ipc_decode_header(b, 20, &h, &e), -EPROTO);
    make_header(b, 24, 0xFF, 0x00);
    b[13] = 'X'; /* the NUL of the magic is required */
    assert_int_equal(ipc_decode_header(b, 20, &h, &e), -EPROTO);
}

static void test_decode_status(void **state)
{
    (void)state;
    struct ipc_header ok = {24, 0xFF, 0x00, 0}, er = {24, 0xFF, 0xFF, 0};
    uint8_t zero[4] = {0}, already[4] = {0x6A, 0x13, 0x13, 0x80};
    uint32_t hr = 1;
    struct cla_error e = {0};
    assert_int_equal(ipc_decode_status(&ok, zero, 4, &hr, &e), 0);
    assert_int_equal(hr, 0);
    assert_int_equal(ipc_decode_status(&er, already, 4, &hr, &e), 0);
    assert_int_equal(hr, 0x8013136A);
    /* Wrong lengths, wrong command, failure inside OK, success inside Error. */
    assert_int_equal(ipc_decode_status(&ok, zero, 3, &hr, &e), -EPROTO);
    struct ipc_header big = {28, 0xFF, 0x00, 0};
    uint8_t eight[8] = {0};
    assert_int_equal(ipc_decode_status(&big, eight, 8, &hr, &e), -EPROTO);
    struct ipc_header other = {24, 0x03, 0x01, 0};
    assert_int_equal(ipc_decode_status(&other, zero, 4, &hr, &e), -EPROTO);
    assert_int_equal(ipc_decode_status(&ok, already, 4, &hr, &e), -EPROTO);
    assert_int_equal(ipc_decode_status(&er, zero, 4, &hr, &e), -EPROTO);
}

/* A tiny payload builder for ProcessInfo replies. */
struct pb {
    uint8_t b[1024];
    size_t n;
};

static void pb_u32(struct pb *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p->b[p->n++] = (uint8_t)(v >> (8 * i));
}

static void pb_str(struct pb *p, const char *s)
{
    pb_u32(p, (uint32_t)strlen(s) + 1);
    for (; *s; s++) {
        p->b[p->n++] = (uint8_t)*s;
        p->b[p->n++] = 0;
    }
    p->b[p->n++] = 0;
    p->b[p->n++] = 0;
}

static void pb_info(struct pb *p, int version, uint32_t v3)
{
    p->n = 0;
    if (version == 3)
        pb_u32(p, v3);
    pb_u32(p, 42);
    pb_u32(p, 0);
    for (int i = 0; i < 16; i++)
        p->b[p->n++] = (uint8_t)i;
    pb_str(p, "dotnet app.dll");
    pb_str(p, "Linux");
    pb_str(p, "x64");
    if (version >= 2) {
        pb_str(p, "app");
        pb_str(p, "10.0.1+abc");
    }
    if (version == 3 && v3 >= 1)
        pb_str(p, "linux-x64");
}

static void test_decode_process_info_versions(void **state)
{
    (void)state;
    struct pb p;
    struct ipc_process_info pi;
    struct cla_error e = {0};
    pb_info(&p, 1, 0);
    assert_int_equal(ipc_decode_process_info(1, p.b, p.n, &pi, &e), 0);
    assert_int_equal(pi.pid, 42);
    assert_string_equal(pi.command_line, "dotnet app.dll");
    assert_string_equal(pi.arch, "x64");
    assert_null(pi.clr_product_version);
    ipc_process_info_free(&pi);

    pb_info(&p, 2, 0);
    assert_int_equal(ipc_decode_process_info(2, p.b, p.n, &pi, &e), 0);
    assert_string_equal(pi.clr_product_version, "10.0.1+abc");
    ipc_process_info_free(&pi);

    pb_info(&p, 3, 1);
    assert_int_equal(ipc_decode_process_info(3, p.b, p.n, &pi, &e), 0);
    assert_string_equal(pi.runtime_identifier, "linux-x64");
    assert_int_equal(pi.cookie.b[5], 5);
    ipc_process_info_free(&pi);

    pb_info(&p, 3, 0);
    assert_int_equal(ipc_decode_process_info(3, p.b, p.n, &pi, &e), 0);
    assert_null(pi.runtime_identifier);
    ipc_process_info_free(&pi);
}

static void test_decode_process_info_malformed(void **state)
{
    (void)state;
    struct pb p;
    struct ipc_process_info pi;
    struct cla_error e = {0};
    pb_info(&p, 2, 0);
    /* Every truncation is an error, never a crash or a partial result. */
    for (size_t cut = 0; cut < p.n; cut++)
        assert_int_equal(ipc_decode_process_info(2, p.b, cut, &pi, &e), -EPROTO);
    /* Trailing garbage on a fixed-layout reply. */
    p.b[p.n++] = 0;
    assert_int_equal(ipc_decode_process_info(2, p.b, p.n, &pi, &e), -EPROTO);
    /* A string without its terminating NUL. */
    pb_info(&p, 1, 0);
    p.b[p.n - 2] = 'x';
    assert_int_equal(ipc_decode_process_info(1, p.b, p.n, &pi, &e), -EPROTO);
    /* A huge declared string length. */
    pb_info(&p, 1, 0);
    p.b[24] = 0xFF; /* pid (8) and cookie (16) come first */
    p.b[25] = 0xFF;
    p.b[26] = 0xFF;
    p.b[27] = 0x7F;
    assert_int_equal(ipc_decode_process_info(1, p.b, p.n, &pi, &e), -EPROTO);
    /* An unpaired surrogate and an embedded NUL. */
    pb_info(&p, 1, 0);
    p.b[28] = 0x00;
    p.b[29] = 0xD8;
    assert_int_equal(ipc_decode_process_info(1, p.b, p.n, &pi, &e), -EPROTO);
    pb_info(&p, 1, 0);
    p.b[30] = 0;
    p.b[31] = 0;
    assert_int_equal(ipc_decode_process_info(1, p.b, p.n, &pi, &e), -EPROTO);
    assert_int_equal(ipc_decode_process_info(4, p.b, p.n, &pi, &e), -EINVAL);
}

static void test_decode_process_info_controls_kept(void **state)
{
    (void)state;
    struct pb p;
    struct ipc_process_info pi;
    struct cla_error e = {0};
    pb_info(&p, 1, 0);
    p.b[28] = 0x1B; /* ESC as the first unit of the command line */
    p.b[30] = 0x9B; /* C1 CSI */
    /* Decoded faithfully (valid UTF-8); shown only through the renderer, visibly. */
    assert_int_equal(ipc_decode_process_info(1, p.b, p.n, &pi, &e), 0);
    assert_string_equal(pi.command_line, "\x1b\xC2\x9Btnet app.dll");
    char shown[64];
    render_text(pi.command_line, strlen(pi.command_line), shown, sizeof(shown));
    assert_string_equal(shown, "\\x1b\\u{009b}tnet app.dll");
    ipc_process_info_free(&pi);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guid_roundtrip),
        cmocka_unit_test(test_guid_rejects),
        cmocka_unit_test(test_encode_attach_exact),
        cmocka_unit_test(test_encode_attach_client_data_and_utf8),
        cmocka_unit_test(test_encode_attach_rejects),
        cmocka_unit_test(test_frame_room),
        cmocka_unit_test(test_encode_simple_and_startup),
        cmocka_unit_test(test_encode_setenv_exact),
        cmocka_unit_test(test_encode_perfmap_and_startup_hook),
        cmocka_unit_test(test_env_check),
        cmocka_unit_test(test_decode_header),
        cmocka_unit_test(test_decode_status),
        cmocka_unit_test(test_decode_process_info_versions),
        cmocka_unit_test(test_decode_process_info_malformed),
        cmocka_unit_test(test_decode_process_info_controls_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
