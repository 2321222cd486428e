"""Reports: findings in text/json/junit/sarif/github, and the jobs x clusters table."""
