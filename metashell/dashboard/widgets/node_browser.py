"""metashell's node tree (the shell's filesystem) as a Tree, with ``cat`` of the selected file.

The tree is built the way the shell builds it (``build_tree(image, info)``) and grown
lazily: a directory's children are listed only when it is expanded. A new frame swaps the
root; if the browser is on screen its expanded directories are listed again over the new
image, otherwise that waits until it is shown. Names and paths are the shell's (encoded as
metashell.tree.nodes says), so a path copied from here works in ``cd``, ``ls`` and ``cat``; the
detail pane shows what ``cat`` prints, Kafka's enums named.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo
from metashell.tree.nodes import Node, NodeError, join_path, locate, resolve, split_path
from metashell.tree.nodes import render
from metashell.tree.root import build_tree

Data = tuple[str, bool]  # absolute path, is a directory


class NodeBrowser(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        # as the shell's ``log PATH``: every change under the selected node (screens/history_keys.py)
        Binding("h", "node_history", "History (log)", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="panel")
        self.border_title = "Nodes"
        self.root_node: Node | None = None
        self._stale = False
        self.selected = "/"
        self._shown = ""

    def compose(self) -> ComposeResult:
        tree: Tree[Data] = Tree("/", data=("/", True), id="node-tree")
        tree.show_root = True
        yield tree
        with VerticalScroll(id="node-detail-scroll"):
            yield Static("", id="node-detail", markup=False)

    @property
    def tree(self) -> Tree[Data]:
        return self.query_one("#node-tree", Tree)

    @property
    def focus_target(self) -> Widget:
        """What takes the focus when the panel comes forward."""
        return self.tree

    def show(self, image: MetadataImage, info: LoadInfo | None) -> None:
        """Swap in the image of a new frame; the tree is brought in line only while visible."""
        self.root_node = build_tree(image, info)
        self._stale = True
        if self.is_mounted and self.display:
            self.rebuild()

    def on_show(self) -> None:
        self.rebuild()  # frames shown while it was hidden (the tabbed layout) left its tree behind

    def rebuild(self) -> None:
        """Bring the listed directories in line with the current image: a directory whose names
        changed is listed again (its open subdirectories reopened); the rest is left alone, so a
        step that touches one partition costs a few name lists, not a new tree."""
        if not self._stale or self.root_node is None:
            return
        self._stale = False
        tree = self.tree
        if not tree.root.is_expanded:
            tree.root.expand()  # the first time: list /
        for node in list(_walk(tree.root)):
            if not node.is_expanded or node.data is None or node.tree is not tree:
                continue
            try:
                names = resolve(self.root_node, node.data[0]).child_names()
            except NodeError:
                continue  # gone: its parent's listing changed too, and is redone
            if [c.data[0].rsplit("/", 1)[-1] for c in node.children if c.data] != names:
                reopen = [n.data[0] for n in _walk(node) if n is not node and n.is_expanded and n.data]
                node.remove_children()
                self._fill(node)
                for path in reopen:
                    found = self._find(path, create=True)
                    if found is not None:
                        found.expand()
        self._detail(self.selected)

    def _fill(self, tree_node: TreeNode[Data]) -> None:
        """List a directory's children under its tree node (once)."""
        if tree_node.children or tree_node.data is None or self.root_node is None:
            return
        path = tree_node.data[0]
        try:
            node = resolve(self.root_node, path)
        except NodeError:
            return
        for name in node.child_names():
            child = node.child(name)
            if child is None:
                continue
            if child.is_directory:
                tree_node.add(Text(name + "/"), data=(join_path(path, name), True))
            else:
                tree_node.add_leaf(Text(name), data=(join_path(path, name), False))

    def _find(self, path: str, create: bool) -> TreeNode[Data] | None:
        """The tree node at ``path``, listing directories on the way when ``create``."""
        node = self.tree.root
        for part in split_path(path):
            if create:
                self._fill(node)
                node.expand()
            target = join_path(node.data[0], part) if node.data else "/" + part
            match = next((c for c in node.children if c.data and c.data[0] == target), None)
            if match is None:
                return None
            node = match
        return node

    def select_path(self, path: str, focus: bool = True) -> bool:
        """Open the tree down to ``path``, put the cursor there and show it (drill-down)."""
        self.rebuild()
        if self.root_node is not None:
            try:
                path = locate(self.root_node, path)[0]  # as the tree spells it
            except NodeError:
                return False
        node = self._find(path, create=True)
        if node is None:
            return False
        self._fill(node)
        tree = self.tree
        tree.move_cursor(node)
        tree.scroll_to_node(node, animate=False)
        self._detail(path)
        if focus:
            tree.focus()
        return True

    @on(Tree.NodeExpanded, "#node-tree")
    def _expanded(self, event: Tree.NodeExpanded[Data]) -> None:
        self._fill(event.node)

    @on(Tree.NodeHighlighted, "#node-tree")
    def _highlighted(self, event: Tree.NodeHighlighted[Data]) -> None:
        if event.node.data is not None:
            self._detail(event.node.data[0])

    def _detail(self, path: str) -> None:
        self.selected = path
        text = self.detail_text(path)
        if text != self._shown:  # Static.update relays out the screen: only when it changed
            self._shown = text
            self.query_one("#node-detail", Static).update(text)
        self.border_subtitle = path

    def detail_text(self, path: str) -> str:
        """What ``cat PATH`` prints for a file; ``ls PATH`` for a directory."""
        if self.root_node is None:
            return ""
        try:
            node = resolve(self.root_node, path)
        except NodeError as exc:
            return str(exc)
        if node.is_directory:
            names = node.child_names()
            return f"{path.rstrip('/')}/  ({len(names)} entries)\n" + "\n".join(names[:200])
        value: Any = node.human_value()
        return render(value)


    def action_node_history(self) -> None:
        show = getattr(self.screen, "show_node_history", None)
        if show is not None:
            show(self.selected)


def _walk(node: TreeNode[Data]):
    yield node
    for child in node.children:
        yield from _walk(child)
