"""Drives `keel serve` with happybase, the way a Python application would, and checks every
result. Run by tests/happybase.rs with the server's port as the first argument."""
import sys

import happybase

port = int(sys.argv[1])
transport = sys.argv[2] if len(sys.argv) > 2 else "buffered"
protocol = sys.argv[3] if len(sys.argv) > 3 else "binary"
c = happybase.Connection("127.0.0.1", port=port, transport=transport, protocol=protocol)

# Tables.
assert c.tables() == [], c.tables()
c.create_table("t", {"cf": dict(max_versions=3), "cf2": dict()})
assert c.tables() == [b"t"]
try:
    c.create_table("t", {"cf": dict()})
    raise AssertionError("created twice")
except Exception as e:  # AlreadyExists
    assert "AlreadyExists" in type(e).__name__ or "exists" in str(e), e
assert c.is_table_enabled("t")
families = c.table("t").families()
assert set(families) == {b"cf", b"cf2"} and families[b"cf"]["max_versions"] == 3, families
assert len(c.table("t").regions()) == 1

t = c.table("t")
# Puts and gets, columns by family and by name.
t.put(b"r1", {b"cf:a": b"1", b"cf:b": b"2", b"cf2:x": b"3"})
t.put(b"r2", {b"cf:a": b"x"})
assert t.row(b"r1") == {b"cf:a": b"1", b"cf:b": b"2", b"cf2:x": b"3"}
assert t.row(b"r1", columns=[b"cf"]) == {b"cf:a": b"1", b"cf:b": b"2"}
assert t.row(b"r1", columns=[b"cf2:x"]) == {b"cf2:x": b"3"}
assert t.row(b"missing") == {}
assert t.rows([b"r2", b"missing", b"r1"]) == [
    (b"r2", {b"cf:a": b"x"}),
    (b"r1", {b"cf:a": b"1", b"cf:b": b"2", b"cf2:x": b"3"}),
]

# Scans: all, prefix, range, reversed, columns, limit, batch size, filter.
assert [k for k, _ in t.scan()] == [b"r1", b"r2"]
assert [k for k, _ in t.scan(row_prefix=b"r1")] == [b"r1"]
assert [k for k, _ in t.scan(row_start=b"r2")] == [b"r2"]
assert [k for k, _ in t.scan(row_stop=b"r2")] == [b"r1"]
assert [k for k, _ in t.scan(reverse=True)] == [b"r2", b"r1"]
assert list(t.scan(columns=[b"cf2"])) == [(b"r1", {b"cf2:x": b"3"})]
assert len(list(t.scan(limit=1))) == 1
assert len(list(t.scan(batch_size=1))) == 2
for i in range(50):
    t.put(b"s%03d" % i, {b"cf:v": b"odd" if i % 2 else b"even"})
assert len(list(t.scan(row_prefix=b"s", batch_size=7))) == 50
odd = list(t.scan(row_prefix=b"s", filter="SingleColumnValueFilter ('cf', 'v', =, 'binary:odd')"))
assert len(odd) == 25 and all(d == {b"cf:v": b"odd"} for _, d in odd), odd[:3]

# Filter strings from ordinary happybase code (HBase's filter language).
rows = lambda f, **kw: [k for k, _ in t.scan(filter=f, **kw)]
assert len(rows("FirstKeyOnlyFilter() AND KeyOnlyFilter()")) == 52  # counting rows
assert all(d == {b"cf:v": b""} for _, d in t.scan(row_prefix=b"s", filter="KeyOnlyFilter()"))
assert rows("PrefixFilter('s00')") == [b"s%03d" % i for i in range(10)]
assert len(rows("PageFilter(3)")) == 3
assert len(rows("ValueFilter(=, 'substring:DD')")) == 25
assert rows("RowFilter(=, 'regexstring:^s04[0-2]$')") == [b"s040", b"s041", b"s042"]
assert rows("ColumnPrefixFilter('x')") == [b"r1"]
assert rows("QualifierFilter(=, 'binary:b') OR FamilyFilter(=, 'binary:cf2')") == [b"r1"]
assert rows("SKIP ValueFilter(!=, 'binary:even')", row_prefix=b"s") == [b"s%03d" % i for i in range(1, 50, 2)]
assert rows("WHILE RowFilter(<, 'binary:s003')", row_prefix=b"s") == [b"s000", b"s001", b"s002"]
assert rows("SingleColumnValueFilter('cf', 'v', =, 'binary:a, b')") == [b"r1", b"r2"]
try:
    list(t.scan(filter="PrefixFilter('s'"))
    raise AssertionError("a bad filter string was accepted")
except Exception as e:  # a TApplicationException carrying the parser's message
    # thriftpy2 keeps the message as bytes.
    text = repr(getattr(e, "message", e))
    assert "TApplicationException" in type(e).__name__, type(e)
    assert "never end" in text or "Mismatched parenthesis" in text, text

# A table of four regions (the server pre-splits `split` at g, n and t) reads as one table.
c.create_table("split", {"cf": dict()})
s = c.table("split")
regions = s.regions()
assert [r["start_key"] for r in regions] == [b"", b"g", b"n", b"t"], regions
assert [r["end_key"] for r in regions] == [b"g", b"n", b"t", b""], regions
assert all(r["name"].startswith(b"split,") and r["name"].endswith(b".") for r in regions), regions
keys = [bytes([c]) + b"%02d" % i for c in b"aghmnstz" for i in range(3)]
with s.batch() as b:
    for k in keys:
        b.put(k, {b"cf:v": k})
assert [k for k, _ in s.scan()] == keys
assert [k for k, _ in s.scan(reverse=True)] == keys[::-1]
assert [k for k, _ in s.scan(row_start=b"h01", row_stop=b"t01")] == [k for k in keys if b"h01" <= k < b"t01"]
assert [k for k, _ in s.scan(row_start=b"m", limit=5)] == [k for k in keys if k >= b"m"][:5]
assert s.row(b"s02") == {b"cf:v": b"s02"}
assert len(list(s.scan(filter="FirstKeyOnlyFilter() AND KeyOnlyFilter()"))) == len(keys)
assert s.counter_inc(b"z99", b"cf:n") == 1
c.compact_table("split", major=True)
c.delete_table("split", disable=True)

# Batches and deletes.
with t.batch() as b:
    b.put(b"r3", {b"cf:a": b"3"})
    b.delete(b"r2")
assert t.row(b"r2") == {}
assert t.row(b"r3") == {b"cf:a": b"3"}
t.delete(b"r1", columns=[b"cf:b"])
assert t.row(b"r1") == {b"cf:a": b"1", b"cf2:x": b"3"}
t.delete(b"r1", columns=[b"cf2"])
assert t.row(b"r1") == {b"cf:a": b"1"}

# Timestamps and versions.
t.put(b"v", {b"cf:a": b"1"}, timestamp=10)
t.put(b"v", {b"cf:a": b"2"}, timestamp=20)
t.put(b"v", {b"cf:a": b"3"}, timestamp=30)
assert t.cells(b"v", b"cf:a", versions=5, include_timestamp=True) == [(b"3", 30), (b"2", 20), (b"1", 10)]
assert t.cells(b"v", b"cf:a", versions=2) == [b"3", b"2"]
assert t.row(b"v", timestamp=30) == {b"cf:a": b"2"}
assert t.row(b"v", include_timestamp=True) == {b"cf:a": (b"3", 30)}
assert t.cells(b"v", b"cf:a", timestamp=30, include_timestamp=True) == [(b"2", 20), (b"1", 10)]
t.delete(b"v", columns=[b"cf:a"], timestamp=20)
assert t.cells(b"v", b"cf:a", versions=5) == [b"3"]

# Counters.
assert t.counter_get(b"c", b"cf:n") == 0
assert t.counter_inc(b"c", b"cf:n") == 1
assert t.counter_inc(b"c", b"cf:n", value=41) == 42
assert t.counter_dec(b"c", b"cf:n", value=2) == 40
t.counter_set(b"c", b"cf:n", 7)
assert t.counter_get(b"c", b"cf:n") == 7

# Admin.
c.compact_table("t")
c.compact_table("t", major=True)
c.disable_table("t")
assert not c.is_table_enabled("t")
c.enable_table("t")
assert t.row(b"r3") == {b"cf:a": b"3"}
c.delete_table("t", disable=True)
assert c.tables() == []
print("happybase: all checks passed (%s, %s)" % (transport, protocol))
