"""A reader of the kernel's BTF type information (the .BTF section of the
image's vmlinux), enough to check struct layouts and function parameters
that the guest module relies on without including them (check_kernel.py).

Format: Documentation/bpf/btf.rst in the kernel tree."""
import struct

MAGIC = 0xEB9F
INT, PTR, ARRAY, STRUCT, UNION, ENUM, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, \
    FUNC, FUNC_PROTO, VAR, DATASEC, FLOAT, DECL_TAG, TYPE_TAG, ENUM64 = range(1, 20)
# bytes after struct btf_type: fixed, and per vlen item
EXTRA = {INT: (4, 0), ARRAY: (12, 0), STRUCT: (0, 12), UNION: (0, 12), ENUM: (0, 8),
         FUNC_PROTO: (0, 8), VAR: (4, 0), DATASEC: (0, 12), DECL_TAG: (4, 0), ENUM64: (0, 12)}
MODIFIERS = (TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG)


class BtfError(Exception):
    pass


def btf_section(elf_path):
    """The raw .BTF section of an ELF file."""
    with open(elf_path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise BtfError("%s is not a 64-bit ELF file" % elf_path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)

    def section(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    names = section(shstrndx)
    for i in range(shnum):
        s = section(i)
        end = data.index(b"\0", names[4] + s[0])
        if data[names[4] + s[0]:end] == b".BTF":
            return data[s[4]:s[4] + s[5]]
    raise BtfError("%s has no .BTF section (kernel built without CONFIG_DEBUG_INFO_BTF?)" % elf_path)


class Member:
    def __init__(self, name, type_id, bit_offset):
        self.name, self.type, self.bit_offset = name, type_id, bit_offset

    @property
    def offset(self):
        return self.bit_offset // 8


class Type:
    def __init__(self, kind, name, size_or_type, extra, items):
        self.kind, self.name = kind, name
        self.size = self.ref = size_or_type
        self.extra, self.items = extra, items


class Btf:
    def __init__(self, raw):
        if len(raw) < 24:
            raise BtfError("BTF data too short")
        magic, _ver, _flags, hdr_len = struct.unpack_from("<HBBI", raw, 0)
        if magic != MAGIC:
            raise BtfError("bad BTF magic %#x" % magic)
        type_off, type_len, str_off, str_len = struct.unpack_from("<IIII", raw, 8)
        self.strings = raw[hdr_len + str_off:hdr_len + str_off + str_len]
        self.types = [None]             # id 0 is void
        self.by_name = {}
        p, end = hdr_len + type_off, hdr_len + type_off + type_len
        while p < end:
            name_off, info, sz = struct.unpack_from("<III", raw, p)
            p += 12
            kind, vlen, kflag = (info >> 24) & 0x1f, info & 0xffff, info >> 31
            fixed, per = EXTRA.get(kind, (0, 0))
            extra = raw[p:p + fixed]
            p += fixed
            items = []
            for _ in range(vlen if per else 0):
                a, b, c = struct.unpack_from("<III", raw, p) if per == 12 else \
                    struct.unpack_from("<II", raw, p) + (0,)
                p += per
                if kind in (STRUCT, UNION):
                    items.append(Member(self.str(a), b, (c & 0xffffff) if kflag else c))
                elif kind == FUNC_PROTO:
                    items.append(Member(self.str(a), b, 0))
                else:
                    items.append((a, b, c))
            t = Type(kind, self.str(name_off), sz, extra, items)
            self.types.append(t)
            if t.name:
                self.by_name.setdefault((kind, t.name), len(self.types) - 1)

    @classmethod
    def from_elf(cls, path):
        return cls(btf_section(path))

    def str(self, off):
        return self.strings[off:self.strings.index(b"\0", off)].decode()

    def find(self, kind, name):
        i = self.by_name.get((kind, name))
        return self.types[i] if i else None

    def resolve(self, type_id):
        """type_id without typedefs and qualifiers"""
        t = self.types[type_id]
        while t is not None and t.kind in MODIFIERS:
            t = self.types[t.ref]
        return t

    def sizeof(self, type_id):
        t = self.resolve(type_id)
        if t is None:
            raise BtfError("sizeof(void)")
        if t.kind in (INT, STRUCT, UNION, ENUM, ENUM64, FLOAT, DATASEC):
            return t.size
        if t.kind == PTR:
            return 8
        if t.kind == ARRAY:
            elem, _index, n = struct.unpack("<III", t.extra)
            return self.sizeof(elem) * n
        raise BtfError("no size for BTF kind %d" % t.kind)

    def describe(self, type_id):
        """a C-like spelling of a type, for messages"""
        t = self.types[type_id]
        if t is None:
            return "void"
        if t.kind == PTR:
            return self.describe(t.ref) + " *"
        if t.kind in (CONST, VOLATILE, RESTRICT, TYPE_TAG):
            return self.describe(t.ref)
        if t.kind == ARRAY:
            elem, _index, n = struct.unpack("<III", t.extra)
            return "%s[%d]" % (self.describe(elem), n)
        prefix = {STRUCT: "struct ", UNION: "union ", ENUM: "enum ", FWD: "struct "}.get(t.kind, "")
        return prefix + (t.name or "?")

    def struct(self, name):
        """{member: (byte offset, size)} and the struct's size, or None"""
        t = self.find(STRUCT, name)
        if t is None:
            return None
        return {m.name: (m.offset, self.sizeof(m.type)) for m in t.items}, t.size

    def params(self, func):
        """[(name, C type)] of a function's parameters, or None"""
        f = self.find(FUNC, func)
        if f is None:
            return None
        proto = self.types[f.ref]
        return [(m.name, self.describe(m.type)) for m in proto.items]
