/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a PE file as far as the checks need: whether it is a .NET assembly, and whether its
 * StartupHook type has a static Initialize taking nothing, from the ECMA-335 metadata tables.
 * Pure: no I/O. */
#include "profset/assembly.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/util.h"

/* PE/COFF (Microsoft PE and COFF Specification; ECMA-335 II.25): the DOS header's e_lfanew at
 * 0x3c, "PE\0\0", the 20-byte COFF header (SizeOfOptionalHeader at 16), then the optional header:
 * magic 0x10b (PE32) or 0x20b (PE32+), NumberOfRvaAndSizes at 92 or 108, the data directories
 * (8 bytes each: RVA, size) right after it. */
#define PE_LFANEW_AT        0x3c
#define PE_COFF_SIZE        20
#define PE_OPT_SIZE_AT      16
#define PE32_MAGIC          0x10b
#define PE32PLUS_MAGIC      0x20b
#define PE_CLI_DIRECTORY    14
#define PE_CLI_HEADER_BYTES 72 /* the CLI header's own size (ECMA-335 II.25.3.3) */

static uint16_t u16_at(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t u32_at(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int assembly_check(const uint8_t *data, size_t len, const char *shown, struct cla_error *e)
{
    if (len < PE_LFANEW_AT + 4 || data[0] != 'M' || data[1] != 'Z') {
        err_set(e, -EINVAL, "%s is not a .NET assembly: not a PE file (no MZ header)", shown);
        return err_hint(e, "give the .dll that the hook's project builds (dotnet build)");
    }
    uint32_t pe = u32_at(data + PE_LFANEW_AT);
    /* Each bound below is checked before the bytes it covers are read: sizes are at most
     * PROFILER_MAX_SIZE, so none of these sums can wrap. */
    if (pe > len || len - pe < 4 + PE_COFF_SIZE || data[pe] != 'P' || data[pe + 1] != 'E' ||
        data[pe + 2] || data[pe + 3])
        return err_set(e, -EINVAL,
                       "%s is not a .NET assembly: no PE signature where its DOS "
                       "header points",
                       shown);
    size_t coff = pe + 4, opt = coff + PE_COFF_SIZE;
    size_t opt_size = u16_at(data + coff + PE_OPT_SIZE_AT);
    if (opt_size > len - opt || opt_size < 2)
        return err_set(e, -EINVAL, "%s is not a .NET assembly: its PE optional header is cut",
                       shown);
    uint16_t magic = u16_at(data + opt);
    size_t count_at = magic == PE32_MAGIC ? 92 : magic == PE32PLUS_MAGIC ? 108 : 0;
    if (!count_at || count_at + 4 > opt_size)
        return err_set(e, -EINVAL, "%s is not a .NET assembly: unknown PE optional header", shown);
    uint32_t dirs = u32_at(data + opt + count_at);
    size_t cli_at = count_at + 4 + (size_t)PE_CLI_DIRECTORY * 8;
    if (dirs <= PE_CLI_DIRECTORY || cli_at + 8 > opt_size || u32_at(data + opt + cli_at) == 0 ||
        u32_at(data + opt + cli_at + 4) < PE_CLI_HEADER_BYTES) {
        err_set(e, -EINVAL, "%s is a native PE file without a CLI header: not a .NET assembly",
                shown);
        return err_hint(e, "a startup hook is a managed class library (.dll) with a StartupHook "
                           "class");
    }
    return 0;
}

/* The PE image as the metadata reader needs it: its bytes and its section table. */
struct pe_image {
    const uint8_t *d;
    size_t len;
    size_t sections; /* offset of the first section header */
    unsigned nsections;
    size_t cli_rva_at; /* offset of the CLI directory entry (RVA, size) */
};

#define PE_SECTION_BYTES   40
#define PE_SECTIONS_MAX    96          /* the PE format's own limit */
#define MD_SIGNATURE       0x424A5342u /* "BSJB" */
#define MD_VERSION_MAX     256
#define MD_STREAMS_MAX     16
#define MD_STREAM_NAME_MAX 32
#define MD_TABLES          64
#define MD_ROWS_MAX        0xFFFFFFu /* a table index has 24 bits (ECMA-335 II.24.2.6) */

enum {
    T_MODULE = 0x00,
    T_TYPEREF = 0x01,
    T_TYPEDEF = 0x02,
    T_FIELDPTR = 0x03,
    T_FIELD = 0x04,
    T_METHODPTR = 0x05,
    T_METHODDEF = 0x06,
    T_PARAM = 0x08,
    T_MODULEREF = 0x1A,
    T_TYPESPEC = 0x1B,
    T_ASSEMBLYREF = 0x23,
};

#define TYPE_VISIBILITY_MASK 0x7u  /* 0 NotPublic, 1 Public; 2..7 nested */
#define METHOD_STATIC        0x10u /* MethodAttributes.Static */
#define SIG_HASTHIS          0x20u
#define SIG_GENERIC          0x10u
#define ELEMENT_TYPE_VOID    0x01u

/* The file offset of `size` bytes at `rva`, inside one section's raw data. */
static int rva_to_off(const struct pe_image *pe, uint32_t rva, uint32_t size, size_t *ret)
{
    for (unsigned i = 0; i < pe->nsections; i++) {
        const uint8_t *h = pe->d + pe->sections + (size_t)i * PE_SECTION_BYTES;
        uint32_t va = u32_at(h + 12), raw = u32_at(h + 16), ptr = u32_at(h + 20);
        if (rva < va || rva - va >= raw)
            continue;
        size_t in = rva - va;
        if (size > raw - in || ptr > pe->len || in + size > pe->len - ptr)
            return -EINVAL;
        *ret = ptr + in;
        return 0;
    }
    return -EINVAL;
}

/* The PE headers again (assembly_check passed), now keeping where things are. */
static int pe_open(const uint8_t *data, size_t len, struct pe_image *pe)
{
    if (assembly_check(data, len, "", NULL) < 0)
        return -EINVAL;
    size_t at = u32_at(data + PE_LFANEW_AT) + 4, opt = at + PE_COFF_SIZE;
    size_t opt_size = u16_at(data + at + PE_OPT_SIZE_AT);
    size_t count_at = u16_at(data + opt) == PE32_MAGIC ? 92 : 108;
    pe->d = data;
    pe->len = len;
    pe->nsections = u16_at(data + at + 2);
    pe->sections = opt + opt_size;
    pe->cli_rva_at = opt + count_at + 4 + (size_t)PE_CLI_DIRECTORY * 8;
    if (pe->nsections > PE_SECTIONS_MAX || pe->sections > len ||
        (size_t)pe->nsections * PE_SECTION_BYTES > len - pe->sections)
        return -EINVAL;
    return 0;
}

/* One metadata stream: where its bytes are in the file. */
struct md_stream {
    size_t off, size;
};

struct metadata {
    const uint8_t *d;
    struct md_stream tables, strings, blob;
    uint32_t rows[MD_TABLES];
    size_t str_idx, blob_idx, guid_idx; /* 2 or 4 bytes */
    size_t table_at[T_METHODDEF + 1];   /* file offset of tables 0..6 */
    size_t row_size[T_METHODDEF + 1];
};

/* Finds the #~, #Strings and #Blob streams behind the CLI header. */
static int md_streams(const struct pe_image *pe, struct metadata *md)
{
    size_t cli, root;
    uint32_t cli_rva = u32_at(pe->d + pe->cli_rva_at);
    if (rva_to_off(pe, cli_rva, PE_CLI_HEADER_BYTES, &cli) < 0)
        return -EINVAL;
    uint32_t md_rva = u32_at(pe->d + cli + 8), md_size = u32_at(pe->d + cli + 12);
    if (md_size < 20 || rva_to_off(pe, md_rva, md_size, &root) < 0)
        return -EINVAL;
    const uint8_t *r = pe->d + root;
    uint32_t vlen = u32_at(r + 12);
    if (u32_at(r) != MD_SIGNATURE || vlen > MD_VERSION_MAX || 20 + (size_t)vlen > md_size)
        return -EINVAL;
    unsigned n = u16_at(r + 18 + vlen);
    size_t at = 20 + vlen;
    bool have_tables = false;
    for (unsigned i = 0; i < n && i < MD_STREAMS_MAX; i++) {
        if (at + 8 > md_size)
            return -EINVAL;
        uint32_t off = u32_at(r + at), size = u32_at(r + at + 4);
        const char *name = (const char *)r + at + 8;
        size_t room = md_size - at - 8, nl = 0;
        while (nl < room && nl < MD_STREAM_NAME_MAX && name[nl])
            nl++;
        if (nl >= room || nl >= MD_STREAM_NAME_MAX || off > md_size || size > md_size - off)
            return -EINVAL;
        struct md_stream s = {root + off, size};
        if (strcmp(name, "#~") == 0) {
            md->tables = s;
            have_tables = true;
        } else if (strcmp(name, "#-") == 0) {
            return -ENOTSUP;
        } else if (strcmp(name, "#Strings") == 0) {
            md->strings = s;
        } else if (strcmp(name, "#Blob") == 0) {
            md->blob = s;
        }
        at += 8 + ((nl + 4) & ~(size_t)3); /* the name, its NUL, padded to 4 */
    }
    return have_tables ? 0 : -EINVAL;
}

static size_t idx_size(const struct metadata *md, unsigned table)
{
    return md->rows[table] < 0x10000 ? 2 : 4;
}

/* A coded index (ECMA-335 II.24.2.6): 2 bytes while every table it may name fits the bits left
 * beside the tag. */
static size_t coded_size(const struct metadata *md, unsigned tag_bits, const unsigned *tables,
                         size_t n)
{
    uint32_t most = 0;
    for (size_t i = 0; i < n; i++)
        if (md->rows[tables[i]] > most)
            most = md->rows[tables[i]];
    return most < (1u << (16 - tag_bits)) ? 2 : 4;
}

/* The row counts and where tables 0..6 lie. */
static int md_tables(struct metadata *md)
{
    const uint8_t *t = md->d + md->tables.off;
    size_t size = md->tables.size;
    if (size < 24)
        return -EINVAL;
    uint8_t heaps = t[6];
    uint64_t valid = (uint64_t)u32_at(t + 8) | (uint64_t)u32_at(t + 12) << 32;
    size_t at = 24;
    for (unsigned i = 0; i < MD_TABLES; i++) {
        if (!(valid >> i & 1))
            continue;
        if (at + 4 > size || (md->rows[i] = u32_at(t + at)) > MD_ROWS_MAX)
            return -EINVAL;
        at += 4;
    }
    /* The pointer tables exist only in the uncompressed form. */
    if (md->rows[T_FIELDPTR] || md->rows[T_METHODPTR])
        return -ENOTSUP;
    md->str_idx = heaps & 1 ? 4 : 2;
    md->guid_idx = heaps & 2 ? 4 : 2;
    md->blob_idx = heaps & 4 ? 4 : 2;
    static const unsigned scope[] = {T_MODULE, T_MODULEREF, T_ASSEMBLYREF, T_TYPEREF};
    static const unsigned type_or_ref[] = {T_TYPEDEF, T_TYPEREF, T_TYPESPEC};
    md->row_size[T_MODULE] = 2 + md->str_idx + 3 * md->guid_idx;
    md->row_size[T_TYPEREF] = coded_size(md, 2, scope, ARRAY_SIZE(scope)) + 2 * md->str_idx;
    md->row_size[T_TYPEDEF] = 4 + 2 * md->str_idx +
                              coded_size(md, 2, type_or_ref, ARRAY_SIZE(type_or_ref)) +
                              idx_size(md, T_FIELD) + idx_size(md, T_METHODDEF);
    md->row_size[T_FIELDPTR] = idx_size(md, T_FIELD);
    md->row_size[T_FIELD] = 2 + md->str_idx + md->blob_idx;
    md->row_size[T_METHODPTR] = idx_size(md, T_METHODDEF);
    md->row_size[T_METHODDEF] = 8 + md->str_idx + md->blob_idx + idx_size(md, T_PARAM);
    for (unsigned i = 0; i <= T_METHODDEF; i++) {
        /* At most 2^24 rows of at most 24 bytes: no overflow in size_t. */
        size_t bytes = (size_t)md->rows[i] * md->row_size[i];
        if (bytes > size - at)
            return -EINVAL;
        md->table_at[i] = md->tables.off + at;
        at += bytes;
    }
    return 0;
}

static uint32_t md_index(const uint8_t *p, size_t width)
{
    return width == 2 ? u16_at(p) : u32_at(p);
}

/* Is the #Strings entry at `idx` exactly `want`? */
static bool md_string_is(const struct metadata *md, uint32_t idx, const char *want)
{
    size_t n = strlen(want);
    if (idx >= md->strings.size || n + 1 > md->strings.size - idx)
        return false;
    const uint8_t *s = md->d + md->strings.off + idx;
    return memcmp(s, want, n) == 0 && s[n] == '\0';
}

/* Is the #Blob entry at `idx` the signature of a static method taking nothing and returning
 * void: DEFAULT calling convention without HASTHIS or GENERIC, 0 parameters, VOID? */
static bool md_sig_static_void(const struct metadata *md, uint32_t idx)
{
    if (idx >= md->blob.size)
        return false;
    const uint8_t *b = md->d + md->blob.off + idx;
    size_t room = md->blob.size - idx;
    /* A compressed length of one byte: every three-byte signature has it. */
    if (room < 4 || b[0] & 0x80 || b[0] < 3)
        return false;
    return (b[1] & (SIG_HASTHIS | SIG_GENERIC | 0x0F)) == 0 && b[2] == 0 &&
           b[3] == ELEMENT_TYPE_VOID;
}

/* Looks for Initialize among the methods [first, end) (1-based rows) of the hook's type. */
static int find_initialize(const struct metadata *md, uint32_t first, uint32_t end,
                           const char *shown, struct cla_error *e)
{
    bool named = false;
    for (uint32_t m = first; m < end && m >= 1 && m <= md->rows[T_METHODDEF]; m++) {
        const uint8_t *row =
            md->d + md->table_at[T_METHODDEF] + (size_t)(m - 1) * md->row_size[T_METHODDEF];
        uint16_t flags = u16_at(row + 6);
        uint32_t name = md_index(row + 8, md->str_idx);
        uint32_t sig = md_index(row + 8 + md->str_idx, md->blob_idx);
        if (!md_string_is(md, name, "Initialize"))
            continue;
        named = true;
        if ((flags & METHOD_STATIC) && md_sig_static_void(md, sig))
            return 0;
    }
    err_set(e, -ENOEXEC, "%s: its StartupHook type has %s", shown,
            named ? "an Initialize method of another shape (the runtime calls a static "
                    "Initialize() taking nothing and returning void)"
                  : "no Initialize method");
    return err_hint(e, "declare 'public static void Initialize()' in StartupHook: the runtime "
                       "would throw, and an exception in a hook applied to a running app ends it");
}

int assembly_check_startup_hook(const uint8_t *data, size_t len, const char *shown,
                                struct cla_error *e)
{
    struct pe_image pe;
    struct metadata md = {.d = data};
    int r;
    if ((r = assembly_check(data, len, shown, e)) < 0)
        return r;
    if ((r = pe_open(data, len, &pe)) < 0 || (r = md_streams(&pe, &md)) < 0 ||
        (r = md_tables(&md)) < 0) {
        if (r == -ENOTSUP)
            return err_set(e, -EINVAL,
                           "%s: uncompressed (#-) metadata, which clrattach does not "
                           "read: build the hook without edit-and-continue",
                           shown);
        return err_set(e, -EINVAL, "%s: its .NET metadata is cut or malformed", shown);
    }
    const size_t tsize = md.row_size[T_TYPEDEF];
    for (uint32_t i = 0; i < md.rows[T_TYPEDEF]; i++) {
        const uint8_t *row = data + md.table_at[T_TYPEDEF] + (size_t)i * tsize;
        uint32_t flags = u32_at(row);
        uint32_t name = md_index(row + 4, md.str_idx);
        uint32_t ns = md_index(row + 4 + md.str_idx, md.str_idx);
        /* The method list is the last column: the next row's marks this one's end. */
        size_t mcol = tsize - idx_size(&md, T_METHODDEF);
        uint32_t first = md_index(row + mcol, idx_size(&md, T_METHODDEF));
        uint32_t end = i + 1 < md.rows[T_TYPEDEF]
                           ? md_index(row + tsize + mcol, idx_size(&md, T_METHODDEF))
                           : md.rows[T_METHODDEF] + 1;
        if ((flags & TYPE_VISIBILITY_MASK) > 1 || !md_string_is(&md, name, "StartupHook") ||
            !(ns == 0 || md_string_is(&md, ns, "")))
            continue;
        return find_initialize(&md, first, end, shown, e);
    }
    err_set(e, -ENOENT, "%s has no type named StartupHook outside any namespace", shown);
    return err_hint(e, "declare 'internal class StartupHook { public static void Initialize() "
                       "}' in no namespace: the runtime would throw, and an exception in a hook "
                       "applied to a running app ends it");
}
