"""Admin site customisation for the operator console (the console's own pages are in console/views.py)."""
from django.contrib import admin

admin.site.site_header = "Memory service console"
admin.site.site_title = "Memory service console"
admin.site.index_title = "Records"
# The console's top navigation replaces the model sidebar, which would squeeze wide tables.
admin.site.enable_nav_sidebar = False
