"""The autoscaling controller: the documented HPA algorithm over the metrics APIs."""
