"""Expand a SAM template into the CloudFormation template it deploys.

Usage: python3 expand.py TEMPLATE

Prints the expanded template as JSON on stdout. It runs the AWS SAM
translator (the Python package samtranslator, which cfn-lint depends on)
offline: no AWS call, no credentials. Local code locations (CodeUri: .,
which `sam build` and `sam deploy` upload) stand in as an S3 URI, as
`sam validate` does. The template must not use managed policy names in
SAM's Policies (there is no IAM to resolve them from).
Exit status 2: samtranslator is not installed; 1: the template does not
translate (the reason on stderr).
"""

import json
import os
import sys

try:
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.translator.transform import transform
    from samtranslator.yaml_helper import yaml_parse
except ImportError as e:  # the caller tells a missing tool from a bad template
    print(f"samtranslator is not installed: {e}", file=sys.stderr)
    sys.exit(2)


PACKAGED_CODE = "s3://bucket/code.zip"


def package(template):
    """Replace local CodeUri values with PACKAGED_CODE."""
    holders = [template.get("Globals", {}).get("Function", {})]
    for res in template.get("Resources", {}).values():
        if isinstance(res, dict) and res.get("Type") == "AWS::Serverless::Function":
            holders.append(res.get("Properties", {}))
    for h in holders:
        uri = h.get("CodeUri")
        if isinstance(uri, str) and not uri.startswith("s3://"):
            h["CodeUri"] = PACKAGED_CODE


class NoManagedPolicies:
    """Stands in for the IAM lookup of managed policy names."""

    def load(self):
        return {}


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 1
    # The translator builds ARNs for the region it runs in; any will do.
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with open(argv[1], encoding="utf-8") as f:
        template = yaml_parse(f.read())
    package(template)
    try:
        expanded = transform(template, {}, NoManagedPolicies())
    except InvalidDocumentException as e:
        for cause in e.causes:
            print(cause.message, file=sys.stderr)
        return 1
    json.dump(expanded, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
