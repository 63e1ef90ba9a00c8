"""``flask --app labapp alerts run``: one tick of the alert rules, for a timer (cron, a
systemd timer) on installations where no worker runs."""
from __future__ import annotations

import click
from flask import current_app
from flask.cli import AppGroup

from labapp.alerts.evaluate import evaluate
from labapp.alerts.mail import MailSettings

alerts_cli = AppGroup("alerts", help="Alert rules: evaluate them and send what is due.")


@alerts_cli.command("run")
def run_command() -> None:
    """Evaluate every active rule once, tell who is to be told and send the due e-mails;
    prints what it did."""
    report = evaluate(mail=MailSettings.of(current_app.config["LABAPP"]))
    for line in report.lines():
        click.echo(f"alerts: {line}")
