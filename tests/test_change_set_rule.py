"""What changed is read from change sets: no module outside engine/image learns it from record types.

engine/image's deltas replay records and say what they changed (engine/image/change_set.py); the
dashboard, the history tables, the shell and whatever comes next read that answer. A module that
compares a record's name or type, looks one up in a table, or asks ``isinstance`` of a record class
is interpreting records again, and is caught here unless it is on ALLOWED: the modules whose job
is a record itself (decoding, printing, writing it) or applying it (the controller, the Raft
layer). The rule is checked on made-up sources below, so a breach it would miss fails too.

What counts as asking a record's type (read from the syntax, ``record`` any expression):
- ``record.record_name``, ``record.type_name``, ``record.control_type``, ``getattr(record,
  "type_name", ...)``, and names assigned from them;
- a string that is a record's name, type name or class name (``"PartitionChangeRecord"``,
  ``"PARTITION_CHANGE_RECORD"``, ``"PartitionChangeRecordV1"``) or a control record's type name,
  and a record class (``m.PartitionChangeRecordV1``).
It is a breach to compare one (``==``, ``in``, ``is``, ...), to index or ``.get`` a table with one,
to key a dict literal by record names, to ``isinstance``/``issubclass`` against a record class, or
to ``match`` on one.
"""

from __future__ import annotations

import ast
from pathlib import Path

from engine.records.metadata_record_serde import CONTROL_TYPE_NAMES
from engine.records.metadata_records import RECORD_CLASSES

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("engine", "metashell")
THE_ONE_PLACE = "engine/image/"  # the deltas: where records become change sets

# Where reading a record's type is the job: "path/" (a package), "path.py" (a module) or
# "path.py::function" (one function), each with why it is not learning what changed.
ALLOWED = {
    "engine/records/": "the codec: decodes, encodes and prints records by their type",
    "engine/storage/log_reader.py": "storage: a snapshot is framed by its header and footer records",
    "engine/admin/log_dump.py": "dump-log prints records",
    "engine/server/metadata_listener.py::_header_timestamp_ms": "reads a snapshot header's field (decoding)",
    "engine/raft/memory_raft_log.py::check_snapshot_bytes": "a snapshot is framed by its header and footer",
    "engine/controller/": "the controller writes records and orders its own bootstrap records",
    "engine/sim/controller_runner.py::_is_fencing": "a seeded bug picks the records of the controller it breaks",
    "engine/sim/controller_runner.py::_is_partition_change": "(the same)",
    "metashell/tree/tree_layout.py::redact_record_json": "prints a record's JSON with its secrets redacted",
    "metashell/bench/dash.py::write_bench_history": "writes the synthetic history it measures",
    "metashell/bench/attach_tool.py::load_requests": "finds its own load's records in what it fetched",
    "metashell/history/transactions.py::marker_of": "a metadata transaction (KIP-868) is framed by its marker "
                                                   "records: where it begins and ends, not what it changed",
    "metashell/spark/read_records.py::_keeper": "the type filter Spark pushed: the records table's printed "
                                                "`type` column, compared as SQL would",
}

_KIND_ATTRIBUTES = {"record_name", "type_name", "control_type"}
RECORD_CLASS_NAMES = {cls.__name__ for cls in RECORD_CLASSES.values()}
RECORD_KINDS = (RECORD_CLASS_NAMES | {cls.record_name for cls in RECORD_CLASSES.values()}
                | {cls.type_name for cls in RECORD_CLASSES.values()} | set(CONTROL_TYPE_NAMES.values()))


def _is_record_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in RECORD_KINDS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_record_literal(element) for element in node.elts)
    return False


def _is_record_class(node: ast.AST) -> bool:
    """``m.PartitionRecordV2`` or ``PartitionRecordV2``, or a tuple holding one."""
    if isinstance(node, ast.Tuple):
        return any(_is_record_class(element) for element in node.elts)
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    return name in RECORD_CLASS_NAMES


class _Scanner(ast.NodeVisitor):
    """Finds where a module asks a record's type; each finding: (line, enclosing function, what)."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str, str]] = []
        self._where: list[str] = []
        self._tainted: list[set[str]] = [set()]  # names assigned a record's kind, per function

    def _kind(self, node: ast.AST) -> bool:
        """An expression that is a record's kind: its name, type name or control type."""
        if isinstance(node, ast.NamedExpr):
            return self._kind(node.value)
        if isinstance(node, ast.Attribute):
            return node.attr in _KIND_ATTRIBUTES
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            return len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and node.args[1].value in _KIND_ATTRIBUTES
        return isinstance(node, ast.Name) and node.id in self._tainted[-1]

    def _breach(self, node: ast.AST, what: str) -> None:
        self.found.append((node.lineno, ".".join(self._where), what))

    def _scoped(self, node: ast.AST) -> None:
        self._where.append(node.name)
        self._tainted.append(set())
        self.generic_visit(node)
        self._tainted.pop()
        self._where.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def _assigned(self, targets: list[ast.AST], value: ast.AST | None) -> None:
        if value is not None and self._kind(value):
            self._tainted[-1].update(t.id for t in targets if isinstance(t, ast.Name))

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assigned(node.targets, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._assigned([node.target], node.value)
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._assigned([node.target], node.value)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        if any(self._kind(o) or _is_record_literal(o) or _is_record_class(o) for o in operands):
            self._breach(node, "compares a record's type")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self._kind(node.slice):
            self._breach(node, "looks a record's type up in a table")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and node.args and self._kind(node.args[0]):
            self._breach(node, "looks a record's type up in a table")
        elif isinstance(func, ast.Name) and func.id in ("isinstance", "issubclass") and len(node.args) == 2 \
                and _is_record_class(node.args[1]):
            self._breach(node, "asks isinstance of a record class")
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        if any(key is not None and _is_record_literal(key) for key in node.keys):
            self._breach(node, "keys a table by record types")
        self.generic_visit(node)

    def visit_Match(self, node: ast.Match) -> None:
        if self._kind(node.subject) or any(_is_record_class(p.cls) for c in node.cases
                                           for p in ast.walk(c.pattern) if isinstance(p, ast.MatchClass)):
            self._breach(node, "matches on a record's type")
        self.generic_visit(node)


def record_type_reads(source: str) -> list[tuple[int, str, str]]:
    """Where ``source`` asks a record's type: (line, enclosing function or class, what it does)."""
    scanner = _Scanner()
    scanner.visit(ast.parse(source))
    return scanner.found


def _allowed(path: str, where: str) -> str | None:
    """The ALLOWED entry that covers a finding in ``path`` inside ``where``, if any."""
    for entry in ALLOWED:
        module, _, function = entry.partition("::")
        covers = path.startswith(module) if module.endswith("/") else path == module
        if covers and (not function or where == function or where.startswith(function + ".")):
            return entry
    return None


def _findings() -> list[tuple[str, int, str, str]]:
    found = []
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if not relative.startswith(THE_ONE_PLACE):
                found.extend((relative, *finding) for finding in record_type_reads(path.read_text()))
    return found


FINDINGS = _findings()


def test_no_module_outside_engine_image_learns_what_changed_from_record_types() -> None:
    breaches = [f"{path}:{line} ({where or 'module'}) {what}" for path, line, where, what in FINDINGS
                if _allowed(path, where) is None]
    assert breaches == [], ("read what changed from a change set (engine/image/change_set.py), or, if this "
                            "module's job is the record itself, add it to ALLOWED saying why")


def test_every_allowed_entry_is_still_needed() -> None:
    used = {_allowed(path, where) for path, _, where, _ in FINDINGS}
    assert sorted(set(ALLOWED) - used) == []


# -- the rule on made-up sources: each breach is caught, and what only prints a record is not ----------

def test_the_rule_catches_a_comparison_of_a_record_s_name() -> None:
    source = (
        "def touched(batch):\n"
        "    for record in batch:\n"
        "        if record.record_name == 'PartitionChangeRecord':\n"
        "            yield record.topic_id\n")
    assert record_type_reads(source) == [(3, "touched", "compares a record's type")]
    # and it would fail the tree's check were it in metashell/dashboard
    assert _allowed("metashell/dashboard/events.py", "touched") is None


def test_the_rule_catches_the_other_ways_of_asking() -> None:
    source = (
        "from engine.records import metadata_records as m\n"
        "_FIELD = {'FenceBrokerRecord': 'id'}\n"                              # 2: a dispatch table
        "def rows(entry, handlers):\n"
        "    name = getattr(entry.record, 'type_name', None)\n"
        "    if name in ('PARTITION_RECORD', 'CLEAR_ELR_RECORD'):\n"         # 5: a name assigned from it
        "        pass\n"
        "    handlers.get(entry.record.record_name)(entry)\n"               # 7: a lookup
        "    handlers[name](entry)\n"                                         # 8: an indexed one
        "    if isinstance(entry.record, (m.TopicRecordV0, int)):\n"          # 9: a record class
        "        pass\n"
        "    if type(entry.record).__name__ == 'RemoveTopicRecordV0':\n"     # 11: a class name
        "        pass\n"
        "    match entry.record:\n"                                           # 13: a class pattern
        "        case m.ClearElrRecordV0():\n"
        "            pass\n"
        "    if entry.record.control_type == 2:\n"                            # 16: a control record's type
        "        pass\n"
        "    if (kind := entry.record.type_name) == 'X':\n"                   # 18: assigned in passing
        "        pass\n")
    assert [line for line, _, _ in record_type_reads(source)] == [2, 5, 7, 8, 9, 11, 13, 16, 18]


def test_the_rule_lets_a_record_be_printed_and_a_change_set_read() -> None:
    source = (
        "def show(entry, changes, out):\n"
        "    out(f'{entry.offset} {entry.record.type_name}')\n"
        "    out(entry.record.type_name.lower())\n"
        "    for key, change in changes.partitions.items():\n"
        "        if change.before is None:\n"
        "            out(f'{key} created')\n"
        "    if type(entry).__name__ == 'LogEntry':\n"
        "        pass\n")
    assert record_type_reads(source) == []


def test_allowed_entries_cover_what_they_name_and_nothing_beside() -> None:
    assert _allowed("engine/records/record_json.py", "anything") == "engine/records/"
    listener = "engine/server/metadata_listener.py"
    assert _allowed(listener, "_header_timestamp_ms") == f"{listener}::_header_timestamp_ms"
    assert _allowed(listener, "_header_timestamp_ms.inner") == f"{listener}::_header_timestamp_ms"
    assert _allowed(listener, "MetadataListener.handle_commit") is None
    assert _allowed("engine/admin/log_dump.py", "") == "engine/admin/log_dump.py"
