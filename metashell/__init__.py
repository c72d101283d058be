"""metashell: browse, watch and analyse KRaft cluster metadata."""
