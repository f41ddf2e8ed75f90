from django import forms
from django.conf import settings
from django.core.validators import RegexValidator

from tenancy.identifiers import USER_ID_MESSAGE, USER_ID_RE
from tenancy.models import Org

# The API's alphabet: a look-alike typed here (`Café`, full-width letters) names nobody, and the
# columns compare exactly, so it would silently find nothing.
USER_ID = [RegexValidator(USER_ID_RE, USER_ID_MESSAGE)]

DATETIME_LOCAL = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")


class RecallExplainForm(forms.Form):
    org = forms.ModelChoiceField(queryset=Org.objects.order_by("slug"))
    user_id = forms.CharField(max_length=settings.MAX_USER_ID_CHARS, validators=USER_ID)
    query = forms.CharField(widget=forms.Textarea(attrs={"rows": 2, "cols": 80}), max_length=2000)
    k = forms.IntegerField(min_value=1, max_value=settings.MAX_RECALL_K, initial=10)
    at = forms.DateTimeField(required=False, widget=DATETIME_LOCAL, label="Reference time",
                             help_text="Optional: recall as of this time (UTC).")
    include_episodes = forms.BooleanField(required=False, initial=True)


class LatencyProbeForm(forms.Form):
    org = forms.ModelChoiceField(queryset=Org.objects.order_by("slug"))
    user_id = forms.CharField(max_length=settings.MAX_USER_ID_CHARS, required=False, validators=USER_ID,
                              help_text="Empty: a user with no memories (measures the fixed cost only).")
    samples = forms.IntegerField(min_value=1, max_value=20, initial=5)


class ApiKeyCreateForm(forms.Form):
    org = forms.ModelChoiceField(queryset=Org.objects.order_by("slug"))
    name = forms.CharField(max_length=100)
    scopes = forms.CharField(required=False, max_length=500, help_text="Comma-separated; empty for none.")

    def clean_scopes(self) -> list[str]:
        return [s.strip() for s in self.cleaned_data["scopes"].split(",") if s.strip()]


class ForgetUserForm(forms.Form):
    org = forms.ModelChoiceField(queryset=Org.objects.order_by("slug"))
    user_id = forms.CharField(max_length=settings.MAX_USER_ID_CHARS, validators=USER_ID)


class PurgeOrgForm(forms.Form):
    org = forms.ModelChoiceField(queryset=Org.objects.order_by("slug"))
    confirm_slug = forms.CharField(required=False, max_length=100, label="Type the org slug to confirm")

    def clean(self):
        cleaned = super().clean()
        org = cleaned.get("org")
        if org is not None and cleaned.get("confirm_slug") and cleaned["confirm_slug"] != org.slug:
            self.add_error("confirm_slug", "That is not the slug of the selected org.")
        return cleaned
