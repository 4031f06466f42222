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
    T_PARAMPTR = 0x07,
    T_PARAM = 0x08,
    T_INTERFACEIMPL = 0x09,
    T_MEMBERREF = 0x0A,
    T_CONSTANT = 0x0B,
    T_CUSTOMATTRIBUTE = 0x0C,
    T_FIELDMARSHAL = 0x0D,
    T_DECLSECURITY = 0x0E,
    T_CLASSLAYOUT = 0x0F,
    T_FIELDLAYOUT = 0x10,
    T_STANDALONESIG = 0x11,
    T_EVENTMAP = 0x12,
    T_EVENTPTR = 0x13,
    T_EVENT = 0x14,
    T_PROPERTYMAP = 0x15,
    T_PROPERTYPTR = 0x16,
    T_PROPERTY = 0x17,
    T_METHODSEMANTICS = 0x18,
    T_METHODIMPL = 0x19,
    T_MODULEREF = 0x1A,
    T_TYPESPEC = 0x1B,
    T_IMPLMAP = 0x1C,
    T_FIELDRVA = 0x1D,
    T_ENCLOG = 0x1E,
    T_ENCMAP = 0x1F,
    T_ASSEMBLY = 0x20,
    T_ASSEMBLYPROCESSOR = 0x21,
    T_ASSEMBLYOS = 0x22,
    T_ASSEMBLYREF = 0x23,
    T_FILE = 0x26,
    T_EXPORTEDTYPE = 0x27,
    T_MANIFESTRESOURCE = 0x28,
    T_GENERICPARAM = 0x2A,
    T_METHODSPEC = 0x2B,
    T_GENERICPARAMCONSTRAINT = 0x2C,
    T_READ = T_ASSEMBLYREF + 1, /* the tables located: 0x00 .. AssemblyRef */
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
    size_t table_at[T_READ];            /* file offset of tables 0x00 .. AssemblyRef */
    size_t row_size[T_READ];
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

/* The coded indexes of ECMA-335 II.24.2.6 the tables up to AssemblyRef use: each a tag width
 * and the tables it may name (an unused tag names none). */
#define CODED(name, bits, ...)                                                                     \
    static size_t name(const struct metadata *md)                                                  \
    {                                                                                              \
        static const unsigned t[] = {__VA_ARGS__};                                                 \
        return coded_size(md, bits, t, ARRAY_SIZE(t));                                             \
    }
CODED(c_type_def_or_ref, 2, T_TYPEDEF, T_TYPEREF, T_TYPESPEC)
CODED(c_has_constant, 2, T_FIELD, T_PARAM, T_PROPERTY)
CODED(c_has_custom_attribute, 5, T_METHODDEF, T_FIELD, T_TYPEREF, T_TYPEDEF, T_PARAM,
      T_INTERFACEIMPL, T_MEMBERREF, T_MODULE, T_DECLSECURITY, T_PROPERTY, T_EVENT, T_STANDALONESIG,
      T_MODULEREF, T_TYPESPEC, T_ASSEMBLY, T_ASSEMBLYREF, T_FILE, T_EXPORTEDTYPE,
      T_MANIFESTRESOURCE, T_GENERICPARAM, T_GENERICPARAMCONSTRAINT, T_METHODSPEC)
CODED(c_has_field_marshal, 1, T_FIELD, T_PARAM)
CODED(c_has_decl_security, 2, T_TYPEDEF, T_METHODDEF, T_ASSEMBLY)
CODED(c_member_ref_parent, 3, T_TYPEDEF, T_TYPEREF, T_MODULEREF, T_METHODDEF, T_TYPESPEC)
CODED(c_has_semantics, 1, T_EVENT, T_PROPERTY)
CODED(c_method_def_or_ref, 1, T_METHODDEF, T_MEMBERREF)
CODED(c_member_forwarded, 1, T_FIELD, T_METHODDEF)
CODED(c_custom_attribute_type, 3, T_METHODDEF, T_MEMBERREF)
CODED(c_resolution_scope, 2, T_MODULE, T_MODULEREF, T_ASSEMBLYREF, T_TYPEREF)

/* The row size of each table up to AssemblyRef (ECMA-335 II.22, its columns in order). */
static void md_row_sizes(struct metadata *md)
{
    size_t *z = md->row_size, S = md->str_idx, G = md->guid_idx, B = md->blob_idx;
    z[T_MODULE] = 2 + S + 3 * G;
    z[T_TYPEREF] = c_resolution_scope(md) + 2 * S;
    z[T_TYPEDEF] =
        4 + 2 * S + c_type_def_or_ref(md) + idx_size(md, T_FIELD) + idx_size(md, T_METHODDEF);
    z[T_FIELDPTR] = idx_size(md, T_FIELD);
    z[T_FIELD] = 2 + S + B;
    z[T_METHODPTR] = idx_size(md, T_METHODDEF);
    z[T_METHODDEF] = 8 + S + B + idx_size(md, T_PARAM);
    z[T_PARAMPTR] = idx_size(md, T_PARAM);
    z[T_PARAM] = 4 + S;
    z[T_INTERFACEIMPL] = idx_size(md, T_TYPEDEF) + c_type_def_or_ref(md);
    z[T_MEMBERREF] = c_member_ref_parent(md) + S + B;
    z[T_CONSTANT] = 2 + c_has_constant(md) + B;
    z[T_CUSTOMATTRIBUTE] = c_has_custom_attribute(md) + c_custom_attribute_type(md) + B;
    z[T_FIELDMARSHAL] = c_has_field_marshal(md) + B;
    z[T_DECLSECURITY] = 2 + c_has_decl_security(md) + B;
    z[T_CLASSLAYOUT] = 6 + idx_size(md, T_TYPEDEF);
    z[T_FIELDLAYOUT] = 4 + idx_size(md, T_FIELD);
    z[T_STANDALONESIG] = B;
    z[T_EVENTMAP] = idx_size(md, T_TYPEDEF) + idx_size(md, T_EVENT);
    z[T_EVENTPTR] = idx_size(md, T_EVENT);
    z[T_EVENT] = 2 + S + c_type_def_or_ref(md);
    z[T_PROPERTYMAP] = idx_size(md, T_TYPEDEF) + idx_size(md, T_PROPERTY);
    z[T_PROPERTYPTR] = idx_size(md, T_PROPERTY);
    z[T_PROPERTY] = 2 + S + B;
    z[T_METHODSEMANTICS] = 2 + idx_size(md, T_METHODDEF) + c_has_semantics(md);
    z[T_METHODIMPL] = idx_size(md, T_TYPEDEF) + 2 * c_method_def_or_ref(md);
    z[T_MODULEREF] = S;
    z[T_TYPESPEC] = B;
    z[T_IMPLMAP] = 2 + c_member_forwarded(md) + S + idx_size(md, T_MODULEREF);
    z[T_FIELDRVA] = 4 + idx_size(md, T_FIELD);
    z[T_ENCLOG] = 8;
    z[T_ENCMAP] = 4;
    z[T_ASSEMBLY] = 16 + B + 2 * S;
    z[T_ASSEMBLYPROCESSOR] = 4;
    z[T_ASSEMBLYOS] = 12;
    z[T_ASSEMBLYREF] = 12 + 2 * B + 2 * S;
}

/* The row counts and where tables 0x00 .. AssemblyRef lie. */
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
    md_row_sizes(md);
    for (unsigned i = 0; i < T_READ; i++) {
        /* At most 2^24 rows of at most 28 bytes: no overflow in size_t. */
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

/* A .NET assembly's metadata tables, located (md_tables) and checked against the bytes. Returns 0
 * or -EINVAL with e saying what is wrong. */
static int md_open(const uint8_t *data, size_t len, const char *shown, struct metadata *md,
                   struct cla_error *e)
{
    struct pe_image pe;
    int r;
    if ((r = assembly_check(data, len, shown, e)) < 0)
        return r;
    if ((r = pe_open(data, len, &pe)) < 0 || (r = md_streams(&pe, md)) < 0 ||
        (r = md_tables(md)) < 0) {
        if (r == -ENOTSUP)
            return err_set(e, -EINVAL,
                           "%s: uncompressed (#-) metadata, which clrattach does not "
                           "read: build the hook without edit-and-continue",
                           shown);
        return err_set(e, -EINVAL, "%s: its .NET metadata is cut or malformed", shown);
    }
    return 0;
}

int assembly_check_startup_hook(const uint8_t *data, size_t len, const char *shown,
                                struct cla_error *e)
{
    struct metadata md = {.d = data};
    int r;
    if ((r = md_open(data, len, shown, &md, e)) < 0)
        return r;
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

/* The #Strings entry at `idx` as an assembly's simple name into `out` (ASSEMBLY_NAME_MAX):
 * NUL-terminated inside the heap, not empty, not "." or "..", no '/', '\\' or control byte (it
 * becomes a file name). Returns 0 or -EINVAL. */
static int md_assembly_name(const struct metadata *md, uint32_t idx, char *out)
{
    if (idx >= md->strings.size)
        return -EINVAL;
    const char *s = (const char *)md->d + md->strings.off + idx;
    size_t room = md->strings.size - idx, n = strnlen(s, room);
    if (n == room || n == 0 || n >= ASSEMBLY_NAME_MAX || strcmp(s, ".") == 0 ||
        strcmp(s, "..") == 0)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if ((uint8_t)s[i] < 0x20 || s[i] == 0x7f || s[i] == '/' || s[i] == '\\')
            return -EINVAL;
    memcpy(out, s, n + 1);
    return 0;
}

int assembly_read_identity(const uint8_t *data, size_t len, const char *shown,
                           struct assembly_identity *ret, struct cla_error *e)
{
    struct metadata md = {.d = data};
    int r;
    if ((r = md_open(data, len, shown, &md, e)) < 0)
        return r;
    /* An assembly has one Assembly row (a module without one is not loadable on its own). Its
     * Name, and each AssemblyRef's, follow the blob of the public key (ECMA-335 II.22.2,
     * II.22.5). */
    if (md.rows[T_ASSEMBLY] != 1)
        return err_set(e, -EINVAL, "%s: its .NET metadata has %s Assembly row", shown,
                       md.rows[T_ASSEMBLY] ? "more than one" : "no");
    if (md.rows[T_ASSEMBLYREF] > ASSEMBLY_REFS_MAX)
        return err_set(e, -EINVAL, "%s references %u assemblies, more than clrattach reads (%d)",
                       shown, (unsigned)md.rows[T_ASSEMBLYREF], ASSEMBLY_REFS_MAX);
    struct assembly_identity id = {0};
    if (md_assembly_name(&md,
                         md_index(data + md.table_at[T_ASSEMBLY] + 16 + md.blob_idx, md.str_idx),
                         id.name) < 0)
        return err_set(e, -EINVAL, "%s: its assembly name is malformed", shown);
    for (uint32_t i = 0; i < md.rows[T_ASSEMBLYREF]; i++) {
        const uint8_t *row =
            data + md.table_at[T_ASSEMBLYREF] + (size_t)i * md.row_size[T_ASSEMBLYREF];
        char name[ASSEMBLY_NAME_MAX];
        if (md_assembly_name(&md, md_index(row + 12 + md.blob_idx, md.str_idx), name) < 0)
            return err_set(e, -EINVAL, "%s: the name of its assembly reference %u is malformed",
                           shown, (unsigned)i + 1);
        bool seen = false;
        for (size_t j = 0; j < id.nrefs && !seen; j++)
            seen = strcmp(id.refs[j], name) == 0;
        if (!seen)
            memcpy(id.refs[id.nrefs++], name, sizeof(name));
    }
    *ret = id;
    return 0;
}
