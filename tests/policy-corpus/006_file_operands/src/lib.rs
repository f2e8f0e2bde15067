// TODO list
