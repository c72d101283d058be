"""The dashboard's widgets: one module per panel, all tables on the Line API RowTable."""

from metashell.dashboard.widgets.brokers_panel import BrokersPanel
from metashell.dashboard.widgets.charts import Charts
from metashell.dashboard.widgets.events_feed import EventsFeed
from metashell.dashboard.widgets.header_bar import HeaderBar
from metashell.dashboard.widgets.node_browser import NodeBrowser
from metashell.dashboard.widgets.partitions_table import PartitionsPanel, PartitionsTable
from metashell.dashboard.widgets.quorum_panel import QuorumPanel
from metashell.dashboard.widgets.row_table import Column, RowTable

__all__ = ["BrokersPanel", "Charts", "Column", "EventsFeed", "HeaderBar", "NodeBrowser", "PartitionsPanel",
           "PartitionsTable", "QuorumPanel", "RowTable"]
